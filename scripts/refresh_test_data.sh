#!/usr/bin/env bash
# Copies the project's shared references into the tests' own data (a user's clone has no ../shared):
# the acceptance corpus (events.tsv, its README, the BPF fixture sources and Makefile) into
# tests/data/corpus and the seed commit messages into tests/data/seed. tests/data/corpus/system.json
# (the corpus machine as a snapshot) is the project's own and stays.
#   EVSPEC_SHARED   where the shared folder is (default: ../shared beside the checkout)
set -euo pipefail
cd "$(dirname "$0")/.."
shared=${EVSPEC_SHARED:-../shared}
[ -f "$shared/corpus/events.tsv" ] || { echo "no shared corpus at $shared" >&2; exit 2; }
rm -rf tests/data/corpus/bpf
mkdir -p tests/data/corpus tests/data/seed
cp -r "$shared/corpus/bpf" tests/data/corpus/bpf
cp "$shared/corpus/events.tsv" "$shared/corpus/README.md" tests/data/corpus/
cp "$shared/seed/perf-bpf-loader-commits.txt" tests/data/seed/
chmod -R u+w tests/data/corpus tests/data/seed
git status --short tests/data/corpus tests/data/seed
