"""A live recording's output path: the drain that empties the rings, the spool behind it, and the
renderer that follows it in time order."""
