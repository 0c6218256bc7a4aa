"""What evspec does with an object on purpose differently from libbpf 1.x (COMPAT 16), said as a
note wherever the object is read (check and record, inspect, verify) so that nothing loads
"without a word" that libbpf would refuse or leave alone:

* legacy ``SEC("maps")`` map definitions, which libbpf 1.0 and later refuse (the whole object);
  evspec reads them as perf 4.x did, since perf's own examples are written that way;
* ``SEC("?...")`` programs (autoload off), which libbpf loads only when asked to; evspec loads
  them, so that the verifier checks them, and attaches nothing.
"""

from __future__ import annotations

from evspec.loader.object.spec import ObjectSpec

# libbpf 1.8's words for an object with a legacy "maps" section (bpftool 7.8 prog loadall)
LIBBPF_LEGACY_MAPS = "elf: legacy map definitions in 'maps' section are not supported by libbpf v1.0+"


def libbpf_differences(spec: ObjectSpec) -> list[str]:
    """One sentence per difference ``spec`` meets, in the order of its maps and programs."""
    out = []
    legacy = [m.name for m in spec.maps if m.legacy]
    if legacy:
        plural = "s" if len(legacy) > 1 else ""
        out.append(f"legacy SEC(\"maps\") map definition{plural} ({', '.join(legacy)}): libbpf 1.0 and later "
                   f"refuse this object (\"{LIBBPF_LEGACY_MAPS}\"); evspec reads {'them' if plural else 'it'} as "
                   "perf 4.x did")
    for p in spec.programs:
        if p.section.startswith("?"):
            out.append(f"program {p.name}: SEC(\"{p.section}\") has autoload off, so libbpf loads it only when "
                       "asked to; evspec loads it (the verifier checks it) and attaches nothing")
    return out
