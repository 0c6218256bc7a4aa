"""An ``ObjectSpec`` and the kernel make live objects: maps created and filled, programs linked
and loaded (``live``), map terms applied (``apply``, ``array_fill``)."""
