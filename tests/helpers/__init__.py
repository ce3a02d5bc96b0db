"""Shared test helpers: the brute-force SPEC implementation, catalogue builders and result checks."""
