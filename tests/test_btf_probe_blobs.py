"""The BTF feature probes on this kernel (root): a probe is a blob the kernel loads exactly when
it knows the feature, so on a kernel that knows all seven (6.18 here; ENUM64 since 6.0) every
probe loads, and each stays a well-formed blob of the kind it probes when read back."""

from __future__ import annotations

from evspec.loader.btf.fixup import probe_blobs
from evspec.loader.btf.reader import Btf, BtfKind
from evspec.loader.kernel import Kernel


def test_every_probe_loads_on_a_kernel_that_knows_every_feature(root_kernel: None) -> None:
    kernel = Kernel()
    for name, blob in probe_blobs().items():
        fd = kernel.load_btf(blob)
        kernel.close(fd)
        ints = [t for t in Btf(blob).types() if t.kind == BtfKind.INT]
        assert all((t.size, t.int_bits, t.int_encoding) == (4, 32, 1) for t in ints), name
