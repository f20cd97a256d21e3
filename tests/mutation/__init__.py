"""Mutation testing of the exercises: mutants of the reference bodies graded with their tests.

``make mutants ARGS="9.*"`` (``python -m tests.mutation``); see ``docs/mutation.md``.
"""
