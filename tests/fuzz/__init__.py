"""Fuzz tests of gpudev's file readers, and the helpers that build hostile files.

`zipforge` writes and dissects zip archives byte by byte (size fields that lie, zip64 claims,
odd names, overlapping members).
"""
