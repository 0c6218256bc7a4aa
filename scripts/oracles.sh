#!/usr/bin/env bash
# Installs today's reference tools for the differential tests, from Debian's registry, into a cache
# folder kept between runs (nothing is installed on the host itself):
#   perf 6.12                       bookworm-backports' linux-perf, unpacked with dpkg -x
#   perf 7.2, bpftool 7.8 (libbpf 1.8), bpftrace, clang 21, libbpf-dev, libbpf-tools
#                                   a Debian sid chroot made by debootstrap
#   perf 7.3                        experimental's linux-perf, unpacked inside the chroot
# and writes a wrapper per tool to $EVSPEC_ORACLES/bin (perf-6.12, perf-7.2, perf-7.3, bpftool-sid,
# bpftrace, clang-21, sid-run), plus versions.txt naming what each is.
#
#   scripts/oracles.sh            set up (a no-op when the recipe's stamp is current)
#   scripts/oracles.sh --sources  also unpack tools/perf of linux-source-6.12, -7.2 and -7.3 into
#                                 $EVSPEC_ORACLES/src (for reading perf's lexer and grammar)
#   scripts/oracles.sh --remove   remove the cache folder
#
#   EVSPEC_ORACLES   the cache folder (default /var/cache/evspec/oracles)
#
# The chroot is never left with anything mounted in it: every command that needs /proc, /sys or /dev
# inside it runs in a private mount namespace that ends with the command, so removing the folder
# cannot reach the host's device nodes.
set -euo pipefail

O=${EVSPEC_ORACLES:-/var/cache/evspec/oracles}
RECIPE=3  # bump when the list of packages or the layout changes
SID_PACKAGES=(linux-perf bpftool bpftrace libbpf-dev libbpf-tools clang-21 llvm-21 make)
NO_VALID_UNTIL=(-o Acquire::Check-Valid-Until=false)

log() { printf 'oracles: %s\n' "$*" >&2; }

# The mirror the host's apt uses, so that this script names none.
mirror() {
    local uri
    uri=$(awk '/^URIs:/ {print $2; exit}' /etc/apt/sources.list.d/*.sources 2>/dev/null || true)
    if [ -z "$uri" ]; then
        uri=$(awk '$1 == "deb" && $0 !~ /security/ {for (i = 2; i <= NF; i++) if ($i ~ /^[a-z]+:\/\//) {print $i; exit}}' \
            /etc/apt/sources.list 2>/dev/null || true)
    fi
    [ -n "$uri" ] || { log "cannot tell the Debian mirror from /etc/apt"; exit 2; }
    printf '%s\n' "${uri%/}"
}

# Runs a command inside the chroot with /proc, /sys, /dev, /tmp and the working directory bound at
# their own paths, in a mount namespace of its own.
in_sid() {
    local root=$1
    shift
    unshare --mount --propagation private -- /bin/sh -c '
        root=$1; shift
        for d in proc sys dev; do mount --rbind "/$d" "$root/$d"; done
        mount --rbind /tmp "$root/tmp"
        here=$(pwd)
        case "$here" in /|/proc*|/sys*|/dev*|/tmp*) ;; *) mkdir -p "$root$here" && mount --bind "$here" "$root$here" ;; esac
        exec chroot "$root" /bin/sh -c "cd \"\$0\" 2>/dev/null || cd /; exec \"\$@\"" "$here" "$@"
    ' sh "$root" "$@"
}

private_apt() {  # $1: folder, $2: sources line; prints the apt options of a private apt state
    local d=$1
    mkdir -p "$d/lists/partial" "$d/archives/partial"
    printf '%s\n' "$2" >"$d/sources.list"
    printf '%s\n' -o "Dir::State::Lists=$d/lists" -o "Dir::Etc::SourceList=$d/sources.list" \
        -o Dir::Etc::SourceParts=/nonexistent -o "Dir::Cache::archives=$d/archives" \
        -o Dir::Cache::pkgcache= -o Dir::Cache::srcpkgcache= -o APT::Sandbox::User=root
}

setup_perf_612() {
    local dest=$O/perf-6.12 apt_dir=$O/apt-bookworm-backports m
    m=$(mirror)
    local -a opts
    mapfile -t opts < <(private_apt "$apt_dir" "deb $m bookworm-backports main")
    log "perf 6.12 from bookworm-backports"
    apt-get "${opts[@]}" -qq update
    rm -rf "$dest.new" && mkdir -p "$dest.new"
    (cd "$apt_dir/archives" && rm -f ./*.deb && apt-get "${opts[@]}" -qq download linux-perf/bookworm-backports)
    dpkg -x "$apt_dir"/archives/linux-perf_*.deb "$dest.new"
    # its only library bookworm does not install with perf 6.1
    (cd "$apt_dir/archives" && apt-get -o APT::Sandbox::User=root -qq download libtraceevent1)
    dpkg -x "$apt_dir"/archives/libtraceevent1_*.deb "$dest.new"
    rm -rf "$dest" && mv "$dest.new" "$dest"
}

setup_sid() {
    local root=$O/sid m
    m=$(mirror)
    if [ ! -x "$root/usr/bin/apt-get" ]; then
        command -v debootstrap >/dev/null || {
            apt-get update -qq
            DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends debootstrap >/dev/null
        }
        log "debootstrap sid (about 30 s)"
        rm -rf "$root.new"
        debootstrap --variant=minbase sid "$root.new" "$m" >"$O/debootstrap.log" 2>&1 ||
            { log "debootstrap failed: $O/debootstrap.log"; exit 2; }
        mv "$root.new" "$root"
    fi
    printf 'deb %s sid main\n' "$m" >"$root/etc/apt/sources.list"
    printf 'deb %s experimental main\n' "$m" >"$root/etc/apt/sources.list.d/experimental.list"
    log "sid: ${SID_PACKAGES[*]}"
    in_sid "$root" apt-get "${NO_VALID_UNTIL[@]}" -qq update
    in_sid "$root" env DEBIAN_FRONTEND=noninteractive apt-get "${NO_VALID_UNTIL[@]}" install -y -qq \
        --no-install-recommends "${SID_PACKAGES[@]}" >/dev/null
    log "perf 7.3 from experimental"
    rm -rf "$root/opt/perf-7.3" "$root/var/cache/evspec" && mkdir -p "$root/opt/perf-7.3" "$root/var/cache/evspec"
    in_sid "$root" /bin/sh -c 'cd /var/cache/evspec && apt-get -o APT::Sandbox::User=root -qq download linux-perf/experimental'
    dpkg -x "$root"/var/cache/evspec/linux-perf_*.deb "$root/opt/perf-7.3"
    rm -rf "$root/var/cache/evspec"
}

write_wrappers() {
    local bin=$O/bin root=$O/sid
    local lib="$root/usr/lib/x86_64-linux-gnu:$root/lib/x86_64-linux-gnu"
    local ld="$root/usr/lib64/ld-linux-x86-64.so.2"
    rm -rf "$bin" && mkdir -p "$bin"
    # perf and bpftool run on the host through the chroot's dynamic loader: no namespace per call
    ldso() {  # name, binary, library path
        printf '#!/bin/sh\nexec %q --library-path %q %q "$@"\n' "$ld" "$3" "$2" >"$bin/$1"
        chmod 755 "$bin/$1"
    }
    printf '#!/bin/sh\nLD_LIBRARY_PATH=%q${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH} exec %q "$@"\n' \
        "$O/perf-6.12/usr/lib/x86_64-linux-gnu" "$O/perf-6.12/usr/bin/perf" >"$bin/perf-6.12"
    chmod 755 "$bin/perf-6.12"
    ldso perf-7.2 "$root/usr/bin/perf" "$lib"
    ldso perf-7.3 "$root/opt/perf-7.3/usr/bin/perf" "$lib"
    ldso bpftool-sid "$root/usr/sbin/bpftool" "$lib"
    # bpftrace and clang find their resources next to their own path: they run inside the chroot
    {
        printf '#!/bin/bash\nroot=%q\n' "$root"
        declare -f in_sid
        printf 'in_sid "$root" "$@"\n'
    } >"$bin/sid-run"
    chmod 755 "$bin/sid-run"
    printf '#!/bin/sh\nexec %q /usr/bin/bpftrace "$@"\n' "$bin/sid-run" >"$bin/bpftrace"
    printf '#!/bin/sh\nexec %q /usr/bin/clang-21 "$@"\n' "$bin/sid-run" >"$bin/clang-21"
    chmod 755 "$bin/bpftrace" "$bin/clang-21"
}

write_versions() {
    local bin=$O/bin
    {
        for p in perf-6.12 perf-7.2 perf-7.3; do printf '%s\t%s\n' "$p" "$("$bin/$p" --version)"; done
        printf 'bpftool-sid\t%s\n' "$("$bin/bpftool-sid" --version | tr '\n' ' ')"
        printf 'bpftrace\t%s\n' "$("$bin/bpftrace" --version)"
        printf 'clang-21\t%s\n' "$("$bin/clang-21" --version | head -n 1)"
        printf 'libbpf-dev\t%s\n' "$(chroot "$O/sid" dpkg-query -W -f '${Version}' libbpf-dev)"
        printf 'libbpf-tools\t%s\n' "$(chroot "$O/sid" dpkg-query -W -f '${Version}' libbpf-tools)"
    } >"$O/versions.txt"
}

unpack_sources() {
    local src=$O/src m
    m=$(mirror)
    mkdir -p "$src"
    local -a opts
    mapfile -t opts < <(private_apt "$O/apt-bookworm-backports" "deb $m bookworm-backports main")
    fetch_source() {  # version, folder holding the .deb
        local v=$1 deb
        [ -d "$src/linux-$v/tools/perf" ] && return
        deb=$(ls "$2"/linux-source-"$v"_*.deb)
        log "unpacking tools/perf of linux-source-$v"
        rm -rf "$src/tmp" && mkdir -p "$src/tmp"
        dpkg -x "$deb" "$src/tmp"
        tar -xaf "$src"/tmp/usr/src/linux-source-"$v".tar.* -C "$src" \
            --wildcards "linux-source-$v/tools/perf/*" "linux-source-$v/tools/lib/*" "linux-source-$v/tools/include/*"
        mv "$src/linux-source-$v" "$src/linux-$v"
        rm -rf "$src/tmp" "$2"/linux-source-"$v"_*.deb
    }
    if [ ! -d "$src/linux-6.12/tools/perf" ]; then
        (cd "$O/apt-bookworm-backports/archives" && apt-get "${opts[@]}" -qq download linux-source-6.12)
        fetch_source 6.12 "$O/apt-bookworm-backports/archives"
    fi
    mkdir -p "$O/sid/var/cache/evspec"
    for v in 7.2 7.3; do
        [ -d "$src/linux-$v/tools/perf" ] && continue
        in_sid "$O/sid" /bin/sh -c "cd /var/cache/evspec && apt-get -o APT::Sandbox::User=root -qq download linux-source-$v"
        fetch_source "$v" "$O/sid/var/cache/evspec"
    done
    rm -rf "$O/sid/var/cache/evspec"
}

case "${1:-}" in
--remove)
    # nothing is ever left mounted in the chroot, but make sure before deleting through it
    if grep -q " $O/" /proc/mounts; then log "something is mounted below $O; not removing"; exit 2; fi
    rm -rf "$O"
    exit 0
    ;;
--sources | "") ;;
*) echo "usage: $0 [--sources|--remove]" >&2; exit 2 ;;
esac

[ "$(id -u)" -eq 0 ] || { log "needs root (debootstrap, chroot, mount namespaces)"; exit 2; }
mkdir -p "$O"
if [ "$(cat "$O/stamp" 2>/dev/null)" != "$RECIPE" ]; then
    setup_perf_612
    setup_sid
    write_wrappers
    write_versions
    echo "$RECIPE" >"$O/stamp"
fi
[ "${1:-}" = --sources ] && unpack_sources
cat "$O/versions.txt" >&2
