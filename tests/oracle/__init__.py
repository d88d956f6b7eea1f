"""Test-side helpers that are not part of the shipped suite: the Java codec oracle."""
