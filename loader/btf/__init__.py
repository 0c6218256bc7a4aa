"""BTF and CO-RE, with no syscall: the BTF reader (``reader``: ``.BTF`` and ``.BTF.ext``), its
fix-up for the running kernel (``fixup``), the target BTF CO-RE resolves against and its name
index (``target``, ``name_index``), and CO-RE itself: resolving a relocation (``core``) and
patching the instructions (``core_patch``)."""
