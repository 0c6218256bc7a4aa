"""``__kconfig``, ``__ksym`` and kfunc externs as libbpf 1.x handles them, with no syscall:
collected, resolved against what the running (or a described) system says and written into the
object (``resolve``), the values of kconfig externs (``kconfig``), typed ksyms and kfuncs of kernel
modules (``module_ksyms``), and what ``check`` says of them (``findings``)."""
