#!/usr/bin/env bash
# Installs everything the test suite needs (Debian packages via apt, Python packages via pip into a
# virtual environment), then runs the linter and the whole test suite against the installed wheel.
#   EVSPEC_VENV     virtual environment to use (default: .venv-test)
#   EVSPEC_ORACLES  where scripts/oracles.sh keeps today's reference tools (default:
#                   /var/cache/evspec/oracles)
set -euo pipefail
cd "$(dirname "$0")/.."

packages=(clang llvm libbpf-dev make gcc libc6-dev linux-libc-dev linux-perf bpftool iproute2 libbpf-tools)
missing=()
for p in "${packages[@]}"; do
    dpkg -s "$p" >/dev/null 2>&1 || missing+=("$p")
done
if ((${#missing[@]})); then
    echo "installing: ${missing[*]}"
    apt-get update -qq
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

# today's perf, bpftool/libbpf, bpftrace and clang, for the differential tests (kept between runs)
export EVSPEC_ORACLES=${EVSPEC_ORACLES:-/var/cache/evspec/oracles}
bash scripts/oracles.sh

venv=${EVSPEC_VENV:-.venv-test}
python3 -m venv "$venv"
venv=$(cd "$venv" && pwd)  # absolute: mypy runs from another folder
"$venv/bin/python" -m pip install -q --disable-pip-version-check --upgrade pip >/dev/null
# A regular (non-editable) install: the tests run against the built wheel, grammar files included.
# setuptools builds in build/lib and never removes a module that left the tree, which would then
# ship in the wheel: start from an empty build folder.
rm -rf build/lib build/bdist.*
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps . >/dev/null
"$venv/bin/python" -m pip install -q --disable-pip-version-check '.[test]' >/dev/null

"$venv/bin/ruff" check evspec loader tests bench
# mypy --strict on what pyproject.toml's [tool.mypy] covers, over a copy installed as users get it
# (from a folder outside the source tree, so that the installed package is what mypy reads)
typed=$(mktemp -d)
trap 'rm -rf "$typed"' EXIT
"$venv/bin/python" -m pip install -q --disable-pip-version-check --no-deps --target "$typed/site" . >/dev/null
(cd "$typed" && MYPYPATH="$typed/site" "$venv/bin/mypy" --config-file "$OLDPWD/pyproject.toml")
# The console script (not `python -m pytest`) keeps the source tree off sys.path, so `evspec` is the
# installed package.
set +e
"$venv/bin/pytest" -q -p no:cacheprovider "$@"
status=$?
set -e
if [ "$status" -eq 5 ]; then
    echo "pytest collected no tests: that is a failure" >&2
    exit 1
fi
exit "$status"
