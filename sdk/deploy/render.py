"""The deploy report as a newcomer reads it in a terminal: where it ran, how close it came, how
long it took, how much memory it used. Printed with rich (plain text when not a terminal)."""

from __future__ import annotations

from typing import IO

from sdk.deploy.keys import CACHE_KINDS
from sdk.deploy.report import DeployReport
from sdk.export import CPU_ONLY
from sdk.targets.base import NpuRun
from sdk.utils.units import human_bytes


def _snr(data: dict | None) -> str:
    if not data or "cosine" not in data:
        return "—"
    if "zero_reference_bound" in data:  # SNR means nothing against all zeros
        return f"all zeros: max {data['max_abs']:.3g} (bound {data['zero_reference_bound']:.3g})"
    snr = data.get("snr_db")
    text = "identical" if snr is None else f"{snr:.1f} dB" if isinstance(snr, float) else str(snr)
    return f"{text}, cos {data['cosine']:.5f}, max {data['max_abs']:.3g}"


def _criterion(data: dict) -> str:
    """The verdict's figure: values outside atol + qtol x step (+ rtol x |ref|), the worst error."""
    if "outside" not in data:
        return data.get("problem", "—")
    where = "all" if not data["outside"] else f"{data['outside']} of {data['values']} outside"
    return f"{where}, max {data['max_abs']:.3g} (bound {data['allowed']:.3g})"


def _op(name: str) -> str:
    """aten.bmm.default / aten::bmm.out -> bmm: what a reader recognises."""
    return name.replace("::", ".").split(".")[1] if "." in name.replace("::", ".") else name


# Graph bookkeeping inside a delegate, not work the NPU does.
_NOT_COMPUTE = ("quantized_decomposed.", "getitem")


def _cpu_of(board: str) -> str:
    """ "Cortex-M85": the board's CPU (board.yaml cpu.core), for the placement table."""
    from sdk.errors import SdkError
    from sdk.firmware.boards import load_board

    try:
        core = load_board(board).cpu_core
    except SdkError:  # a report of a board no longer here
        core = "cortex-m55"
    return core.replace("cortex-", "Cortex-").replace("-m", "-M")


def render(report: DeployReport, file: IO[str] | None = None) -> None:
    import sys

    from rich.console import Console
    from rich.table import Table

    # markup off: shapes like [1, 84] and user text are printed as they are.
    out = file or sys.stdout
    width = None if out.isatty() else 120  # a log or a pipe: wide enough for the tables
    console = Console(file=out, width=width, highlight=False, markup=False)
    data = report.to_json()
    console.print(
        f"{report.model} on {report.board} / {report.target} "
        f"({report.target_why}); NPU {report.npu}, {report.quant}"
    )
    calibration = report.quantization.get("calibration")
    if calibration:  # a cache entry made before the report said it has none
        console.print(
            f"calibration: {calibration['samples']} sample(s) from {calibration['source']}"
        )
    if report.board_use:  # a board: its place in a farm, the firmware kept or flashed
        from sdk.targets.strategy import BoardUse

        console.print(BoardUse.describe(report.board_use))

    steps = Table(title="steps", title_justify="left")
    for column in ("step", "status", "seconds", "detail"):
        steps.add_column(column)
    for s in data["steps"]:
        steps.add_row(s["name"], s["status"], f"{s['seconds']:.1f}", s["detail"])
    console.print(steps)

    where = Table(title="where it ran", title_justify="left")
    where.add_column("part")
    where.add_column("ran on")
    where.add_column("operators")
    for d in data["placement"]["npu"]:
        ops = ", ".join(
            f"{_op(op)} ×{n}"
            for op, n in sorted(d["operators"].items())
            if not op.startswith(_NOT_COMPUTE)
        )
        where.add_row(f"NPU delegate {d['index']}", d["ran_on"], ops)
    if not data["placement"]["npu"]:
        where.add_row("NPU", "—", CPU_ONLY)
    cpu = ", ".join(f"{_op(c['op'])} ×{c['calls']}" for c in data["placement"]["cpu"])
    where.add_row("CPU kernels", f"{_cpu_of(report.board)} ({report.target})", cpu or "none")
    console.print(where)
    if not data["placement"]["npu"]:
        console.print(CPU_ONLY)
    if data["npu_run"]:
        npu_run = NpuRun(**data["npu_run"])
        console.print(f"NPU: {npu_run.describe()}")
        if npu_run.describe_ports():
            console.print(f"NPU ports (the board's timing adapters): {npu_run.describe_ports()}")

    accuracy = Table(title="how close (target vs references)", title_justify="left")
    for column in ("output", "host reference", "within tolerance", "quantized model", "fp32 model",
                   "ok"):  # fmt: skip
        accuracy.add_column(column)
    for o in data["outputs"]:
        host = o["host_reference"]
        host_text = "differs" if host is None else (
            "bit-identical" if host["identical"] else f"max {host['max_abs_diff']:.3g}"
        )  # fmt: skip
        accuracy.add_row(
            f"{o['index']}: {o['dtype']} {o['shape']}", host_text, _criterion(o["criterion"]),
            _snr(o.get("quantized")), _snr(o.get("fp32")), "yes" if o["ok"] else "NO",
        )  # fmt: skip
    console.print(accuracy)
    for warning in data.get("warnings", []):
        console.print(f"warning: below the SNR floor: {warning}", style="yellow")

    timing = Table(title="how long", title_justify="left")
    for column in ("what", "figure", "source", "vs Vela estimate"):
        timing.add_column(column)
    notes = []  # what a figure's milliseconds assume, once below the table
    for t in data["timing"]:
        value = t.get("value")
        figure = "—" if value is None else f"{round(value):,} {t.get('unit', '')}"
        if t.get("seconds"):
            if t.get("at") and t["at"] not in notes:
                notes.append(t["at"])
            mark = "*" * (notes.index(t["at"]) + 1) if t.get("at") else ""
            figure += f" ({t['seconds'] * 1e3:.3g} ms{mark})"
        vela = t.get("vela_estimate_cycles")
        versus = f"{t['ratio_to_vela']:.2f}× of {round(vela):,}" if t.get("ratio_to_vela") else ""
        timing.add_row(t["what"], figure, t["source"], versus)
    console.print(timing)
    for k, note in enumerate(notes):
        console.print(f"{'*' * (k + 1)} {note}")
    if data.get("performance"):
        render_performance(console, data["performance"])

    memory = Table(title="how much memory", title_justify="left")
    for column in ("region", "used", "capacity", "%", "source"):
        memory.add_column(column)
    for m in data["memory"]["regions"]:
        if not m["used"] and m["source"] == "ELF":
            continue
        share = f"{100 * m['used'] / m['size']:.1f}" if m["size"] else "—"
        memory.add_row(
            m["region"], human_bytes(m["used"]), human_bytes(m["size"]), share, m["source"]
        )
    arenas = data["memory"]["arenas_after_load"]
    if arenas:
        used, size = arenas["planned_used"], arenas["planned_size"]
        share = f"{100 * used / size:.1f}" if size else "—"
        memory.add_row(
            "planned arena (after load)", human_bytes(used), human_bytes(size), share, "firmware"
        )
    console.print(memory)

    if data.get("profile"):
        render_profile(console, data["profile"])
    if data.get("dataset"):
        render_dataset(console, data["dataset"])

    cache = data["cache"]
    hits = [k for k in CACHE_KINDS if cache.get(k) and cache[k]["hit"]]
    console.print(
        f"cache: {', '.join(hits) + ' from the cache' if hits else 'nothing reused'}"
        f" ({cache['root'] if cache['enabled'] else 'off'})"
    )
    verdict = "PASSED" if report.passed else f"FAILED: {report.failure}"
    console.print(
        f"deploy {verdict}; report {data['files']['report']}",
        style="green" if report.passed else "red",
    )


def render_performance(console, perf: dict) -> None:
    """One inference at the board's clocks: latency, the CPU's share, the NPU's use of its
    MACs and how much of its time memory set; the cross-check of the firmware's figure."""
    from rich.table import Table

    config = perf["config"]
    clocks = f"CPU {config['cpu_clock_hz'] / 1e6:g} MHz, NPU {config['npu_clock_hz'] / 1e6:g} MHz"
    table = Table(title=f"how fast on the board ({clocks})", title_justify="left")
    for column in ("what", "figure"):
        table.add_column(column)
    table.add_row(
        "latency", f"{perf['latency_ms']:.3g} ms ({perf['inferences_per_s']:.4g} inferences/s)"
    )
    table.add_row(
        "CPU",
        f"{perf['cpu_ms']:.3g} ms, {100 * perf['cpu_share']:.1f}% of the latency: "
        f"{perf['cpu_instructions']:,} {config['cpu_time']}",
    )
    if perf["npu_cycles_modelled"]:
        share = perf["npu_memory_bound_share"]
        bound = "" if share is None else f", memory-bound {100 * share:.1f}% of its cycles"
        table.add_row(
            "NPU",
            f"{perf['npu_ms']:.3g} ms: {perf['npu_cycles_modelled']:,} {config['npu_time']}; "
            f"MAC utilisation {100 * perf['npu_mac_utilisation']:.1f}%{bound}",
        )
        table.add_row(
            "NPU config", f"{config['npu']}, {config['system_config']} / {config['memory_mode']}"
        )
    console.print(table)
    check = perf.get("npu_cycles_check")
    if check and not check["agrees"]:
        console.print(f"warning: {check['problem']}", style="yellow")


def _figure(value: float | None, digits: int = 4) -> str:
    return "-" if value is None else f"{value:.{digits}g}"


def render_dataset(console, section: dict) -> None:
    """The --dataset tables: per output the X-cross rows, then accuracy and a confusion matrix
    when the samples have labels."""
    from rich.table import Table

    rate = section["samples_per_s"]
    head = f"data set {section['file']}: {section['measured']} of {section['samples']} samples"
    console.print(head + (f", {rate:.1f} samples/s" if rate else ""))
    for out in section["outputs"]:
        rows = Table(title=f"output {out['index']}: errors", title_justify="left")
        for column in ("pair", "RMSE", "MAE", "L2R", "COS", "max |diff|", "steps", "identical"):
            rows.add_column(column)
        for pair, r in out["rows"].items():
            rows.add_row(
                pair.replace("_", " "), _figure(r["rmse"]), _figure(r["mae"]), _figure(r["l2r"]),
                _figure(r["cos"], 6), _figure(r["max_abs"]), _figure(r.get("max_steps"), 3),
                str(r.get("identical_samples", "")),
            )  # fmt: skip
        console.print(rows)
        worst = ", ".join(
            f"{w['sample']} ({w['max_abs_vs_quantized']:.3g})" for w in out["worst_samples"]
        )
        console.print(f"worst samples vs the quantized model: {worst}")
        classification = out.get("classification")
        if classification is None:
            continue
        acc = Table(title=f"output {out['index']}: accuracy (%)", title_justify="left")
        for column in ("", "device", "quantized", "fp32"):
            acc.add_column(column)
        for k in ("top1", "top5"):
            acc.add_row(
                k, *(f"{classification[k][m]:.2f}" for m in ("device", "quantized", "fp32"))
            )
        console.print(acc)
        agree = classification["agreement"]
        console.print(
            f"device top-1 agrees with the quantized model on {agree['device_vs_quantized']:.2f}%"
            f" of samples, with fp32 on {agree['device_vs_fp32']:.2f}%"
        )
        matrix = classification["confusion"]
        if len(matrix) > 20:
            console.print(f"confusion matrix: {classification.get('confusion_png', 'deploy.json')}")
            continue
        confusion = Table(title="confusion (rows: label, columns: device)", title_justify="left")
        confusion.add_column("")
        for j in range(len(matrix)):
            confusion.add_column(str(j))
        for label, row in enumerate(matrix):
            confusion.add_row(str(label), *(str(v) for v in row))
        console.print(confusion)


def render_profile(console, profile: dict, top: int = 10) -> None:
    """Where the time goes: the most expensive operators of the run, CPU kernels and NPU
    delegates (their CPU side, and their NPU cycles: modelled on QEMU, Vela's estimate; the
    virtual U55's host time is not the target's), with milliseconds at the board's clocks."""
    from rich.table import Table

    table = Table(title=f"where the time goes ({profile['source']})", title_justify="left")
    columns = ("operator", "on", "calls", "ticks", "instructions", "share %",
               "NPU cycles: model / Vela est.", "ms (board)")  # fmt: skip
    for column in columns:
        table.add_column(column)
    for row in profile["operators"][:top]:
        estimate = row.get("vela_estimate_cycles")
        modelled = row.get("npu_cycles_modelled")
        npu = "" if estimate is None and modelled is None else (
            f"{'-' if modelled is None else f'{modelled:,}'} / "
            f"{'-' if estimate is None else f'{round(estimate):,}'}"
        )  # fmt: skip
        latency = row.get("latency_ms")
        table.add_row(
            row["what"], row["kind"], str(row["calls"]), str(row["ticks"]),
            "-" if row["instructions"] is None else str(row["instructions"]),
            f"{100 * row['share']:.1f}", npu, "-" if latency is None else f"{latency:.3g}",
        )  # fmt: skip
    console.print(table)
    more = len(profile["operators"]) - top
    cpu, npu = profile["cpu_kernel_ticks"], profile["delegate_ticks"]
    share = f"CPU kernels {cpu} ticks, NPU delegates {npu} ticks (their CPU side)"
    console.print(
        share
        + (f"; {more} more operators in deploy.json" if more > 0 else "")
        + f"; trace {profile['trace']}"
    )
