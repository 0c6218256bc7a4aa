"""``evspec script -i FILE``: print a perf.data file's records as live ``evspec record`` prints them:
the command's arguments and output; the file is replayed by ``evspec.loader.output.saved.replay`` and its
lines rendered by ``evspec.loader.output.script``. The PERF_RECORD_LOST_SAMPLES records (each event
instance's exact loss count) follow the samples, one line each; JSON output ends with record's
summary line (samples, lost).
"""

from __future__ import annotations

import argparse
import sys
from typing import TYPE_CHECKING, TextIO

if TYPE_CHECKING:
    from evspec.loader.output.script import LostLine, RingRecordLine, SampleLine

EXIT_ERROR = 2


def add_script_parser(subparsers: argparse._SubParsersAction) -> argparse.ArgumentParser:  # type: ignore[type-arg]
    p: argparse.ArgumentParser = subparsers.add_parser(
        "script",
        help="print the records of a perf.data file (evspec record -o, or perf record)",
        description="perf script for bpf-output and tracepoint samples: -i FILE",
    )
    p.add_argument("-i", "--input", default="perf.data", metavar="FILE", help="the file (default: perf.data)")
    p.add_argument("--format", choices=("text", "json"), default="text")
    p.set_defaults(func=script_main)
    return p


def script_main(args: argparse.Namespace, *, stdout: TextIO | None = None, stderr: TextIO | None = None) -> int:
    from evspec.loader.errors import ObjectError
    from evspec.loader.output.saved.perfdata import read_perf_data
    from evspec.loader.output.saved.replay import ScriptTotals, name_width, script_lines
    from evspec.loader.output.script import JsonRenderer, TextRenderer, paused_gc, summary_json

    out = stdout or sys.stdout
    err = stderr or sys.stderr
    fmt_json = args.format == "json"
    try:
        data = read_perf_data(args.input)
        renderer = JsonRenderer() if fmt_json else TextRenderer(name_width(data))
        batch: list[SampleLine | LostLine | RingRecordLine] = []
        totals = ScriptTotals()
        with paused_gc():
            for line in script_lines(data, totals):
                batch.append(line)
                if len(batch) >= 4096:
                    out.write(renderer.render(batch))
                    batch.clear()
            out.write(renderer.render(batch))
        from evspec.loader.output.script import lost_samples_json, lost_samples_text

        render_lost = lost_samples_json if fmt_json else lost_samples_text
        out.write("".join(render_lost(x) for x in totals.lost_samples))
        if fmt_json:
            out.write(summary_json(totals.summary()))
        out.flush()
    except ObjectError as exc:
        err.write(f"evspec script: error: {exc.message}\n")
        for help_line in exc.help:
            err.write(f"  help: {help_line}\n")
        return EXIT_ERROR
    except BrokenPipeError:
        return 0
    if data.truncated:
        err.write(f"evspec script: warning: {args.input} was not finished by its writer; "
                  "read up to its last complete record\n")
    return 0
