"""Classic consumer groups: membership and administration (GROUPS.Rn)."""
