"""BPF objects as plain data, with no syscall: ELF reading, the ``ObjectSpec``, section names,
compiling sources with clang, the offline checks of map terms and sections, and ``inspect``
(BTF and CO-RE live in ``loader.btf``). Nothing here imports ``kernel``, ``load``, ``attach`` or
``output`` (a test keeps it so)."""
