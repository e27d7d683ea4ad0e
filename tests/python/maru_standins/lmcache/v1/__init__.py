"""A stand-in for LMCache, as much as Maru's maru_lmcache imports
(tests/python/test_maru_integrations.py): not LMCache."""
