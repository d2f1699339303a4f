"""Fuzz tests of gpudev's file reader, and the helpers that build hostile files.

`zipforge` writes and dissects zip archives byte by byte (size fields that lie, zip64 claims,
odd names, overlapping members); `seeds` writes the valid files to start from; `mutate` and
`archives` turn them into hostile ones, one mutation kind at a time; `oracle` loads one file
under a time limit and a memory budget and judges the result against NumPy. The tests run a
short profile inside `make test` and a long one with `make fuzz` (docs/contributing/fuzzing.md).
"""
