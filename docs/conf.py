"""Sphinx configuration of gpudev's manual (MyST Markdown; `make docs` builds it)."""

import pathlib
import sys

sys.path.insert(0, str(pathlib.Path(__file__).resolve().parent / "_ext"))

import gpudev  # noqa: E402  (the reference is read from the installed package)

project = "gpudev"
author = "gpudev's contributors"
release = gpudev.__version__ if hasattr(gpudev, "__version__") else ""
extensions = ["myst_nb", "sphinx.ext.autodoc", "gpudev_docs"]
# Notebooks are shown as stored (without outputs); the tests execute them, the build does not.
nb_execution_mode = "off"
myst_heading_anchors = 3
exclude_patterns = ["_build", "README.md", "**/.ipynb_checkpoints", "_generated/exercises-list.md"]
html_theme = "furo"
html_title = "gpudev"
autodoc_default_options = {"member-order": "alphabetical"}
nitpicky = False
