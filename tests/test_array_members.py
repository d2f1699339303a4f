"""Every member of gd.Array has exactly one home: the C type (csrc/core/array_type.c's tables,
the op rows, autograd) or gpudev/_array.py, whose install() refuses a name the type has.

A Python member set anywhere else, or one that replaces a C member, fails here; a C method
that a Python one wraps has a private name (a.to calls a._to), so it is not shadowed.
"""

from __future__ import annotations

import inspect
import types

import pytest

import gpudev as gd
from gpudev import _array

# what the C type's own members are: its method table, attributes, slots and data members
C_KINDS = (types.MethodDescriptorType, types.GetSetDescriptorType, types.WrapperDescriptorType,
           types.MemberDescriptorType, types.BuiltinMethodType)
WRAPPED = {"to": "_to", "max": "_max", "min": "_min", "flatten": "_flatten", "transpose": "_transpose",
           "size": "_size", "numel": "_size"}


def test_every_member_has_one_home():
    python = _array.members()
    for name, member in vars(gd.Array).items():
        if name in python:
            assert member is python[name], f"Array.{name} is not the one gpudev/_array.py defines"
        elif name not in ("__doc__", "__module__"):
            assert isinstance(member, C_KINDS), (
                f"Array.{name} ({type(member).__name__}) is set in Python outside gpudev/_array.py; "
                f"define it in ArrayMethods there")
    missing = sorted(set(python) - set(vars(gd.Array)))
    assert not missing, f"gpudev/_array.py members not installed: {missing}"


def test_install_refuses_a_name_the_type_has():
    # installing again meets every member already set: each is named, nothing is replaced
    before = dict(vars(gd.Array))
    with pytest.raises(RuntimeError, match=r"already has .*\bto\b.*defined once"):
        _array.install()
    assert dict(vars(gd.Array)) == before
    # a type whose own table has one of the names (as the C table had `to`) is refused too
    shadowed = type("Shadowed", (), {"max": lambda self: None})
    with pytest.raises(RuntimeError, match=r"Shadowed already has max\b"):
        _array.install(shadowed)
    assert "to" not in vars(shadowed)


@pytest.mark.parametrize("public, private", sorted(WRAPPED.items()))
def test_wrapped_c_members_are_private(public, private):
    assert public in _array.members()
    assert isinstance(vars(gd.Array)[private], (types.MethodDescriptorType, types.GetSetDescriptorType))


@pytest.mark.parametrize("name", ["_to", "_max", "_min", "_flatten", "_transpose"])
def test_private_c_methods_keep_their_signature(name):
    # the C method under its private name still declares its parameters (tests/test_signatures.py
    # checks them against the parser), and its messages name the public method
    assert list(inspect.signature(getattr(gd.Array, name)).parameters)[0] == "self"


def test_messages_name_the_public_method():
    a = gd.arange(6.0)
    with pytest.raises(TypeError, match=r"^to\(device, copy=False, non_blocking=False\)"):
        a.to()
    with pytest.raises(TypeError, match=r"^max\(\) got an unexpected keyword argument 'bogus'"):
        a.max(bogus=1)
    assert a.size == a.numel() == 6 and a.to(gd.float32).dtype == gd.float32
    assert a.max().item() == 5.0 and a.flatten().shape == (6,) and a.reshape(2, 3).transpose().shape == (3, 2)
