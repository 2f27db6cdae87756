"""Typed sweep factors parsed at the edge: the machine (host or guest) and the list-valued
run options (threads, sizes, frequencies)."""
