"""ExecuTorch's own Ethos-U55 INT tests (the installed wheel's), run through `sdk deploy`.

The peer suite is the wheel's executorch/backends/arm/test/{ops,models}/test_*.py. Its test
functions are called, not run by pytest, with ExecuTorch's pipeline classes replaced by
recording stand-ins: a test's `EthosU55PipelineINT(...)` (or `OpNotSupportedPipeline(...,
u55_subset=True)`) records the module, the inputs and the options, and `run()` does nothing.
No ExecuTorch tester runs; the SDK's deploy does, per case, on a `case_N.py` model file that
rebuilds the same module the same way (`rebuild`), so the recorded objects need no pickling.

Options map to the SDK's: a16w8 -> `quant="int16"`, per_channel_quantization=False ->
`QuantOptions(weights="per-tensor")`, symmetric_io_quantization -> `io="symmetric"`. Cases
ExecuTorch marks xfail or skip (per parameter or per function, except the xfail for a missing
Corstone-300 FVP) are listed as `et-xfail` and not run.

Outcomes are `sdk deploy`'s own verdict (sdk.deploy.verdict, with the case's atol/rtol/qtol):
pass, mismatch (the device differs from the host reference), quality (the device matches the
host but is outside the tolerance of the quantized model), refused (an SdkError: its first
clause), traceback (any other exception: an SDK bug).

    PYTHONPATH=$PWD .venv/bin/python bench/peer_suite.py [--first | --all] [--shard K/N]
        [--limit N] [--match TEXT] [--list] [--json FILE] [--workdir DIR] [--cache-dir DIR]
        [--rerun FILE.json ...] [--sample N] [--seed S] [--case NAME ...]

`--sample N --seed S`: N cases drawn at random (seeded) from the runnable ones, their test data
and weights made with seed S too (a fresh sample: other cases, other data). `--case NAME` runs
the named cases (as printed) even where ExecuTorch marks them xfail.

`--rerun` takes earlier runs' --json files: their passes stand and every other selected case
runs (again after a fix, or for the first time after an interrupted run); the figures cover all.
"""

from __future__ import annotations

import argparse
import importlib
import inspect
import itertools
import json
import pkgutil
import random
import sys
import time
import traceback
import warnings
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[1]
ET_TEST = "executorch.backends.arm.test"
SUITES = ("ops", "models")
# Test data and weights are random: one seed makes a case the same in every process (--seed
# sets it for a run; the case files carry it).
SEED = 0
OUTCOMES = ("pass", "mismatch", "quality", "refused", "traceback")
# ExecuTorch's xfail for a missing FVP (U55: Corstone-300, U85: Corstone-320): no verdict
FVP_XFAIL = "Did not find Corstone-3"


@dataclass
class Case:
    """One test function call with one parametrization; enough to rebuild it elsewhere."""

    test_module: str  # e.g. ops.test_add
    function: str
    ids: tuple[str, ...]  # one parametrization id per parametrize mark, outermost first
    kind: str = "int"  # int: EthosU55PipelineINT; not-delegated: OpNotSupportedPipeline
    quant: str = "int8"
    weights: str = "per-channel"
    io: str = "auto"
    cpu_ops: list[str] = field(default_factory=list)  # ops ExecuTorch expects left on the CPU
    module_class: str = ""
    options: dict = field(default_factory=dict)  # the pipeline's other recorded arguments
    modules: dict[str, str] = field(default_factory=dict)  # QuantOptions.modules
    calls: list[str] = field(default_factory=list)  # pipeline methods the test called
    unmapped: list[str] = field(default_factory=list)  # settings the SDK has no option for
    et_xfail: str | None = None  # ExecuTorch's reason when it marks the case xfail/skip
    collect_error: str | None = None

    @property
    def name(self) -> str:
        suffix = f"[{'-'.join(self.ids)}]" if self.ids else ""
        return f"{self.test_module}::{self.function}{suffix}"


@dataclass
class Outcome:
    case: str
    test_module: str
    outcome: str
    detail: str = ""
    seconds: float = 0.0
    cpu_ops_placed: list[str] = field(default_factory=list)
    report: str = ""  # the deploy's deploy.json, when it got that far


# ---------------------------------------------------------------------------------------------
# Recording stand-ins for ExecuTorch's pipeline classes.


class _Recorder:
    """Stands in for a pipeline class: records its arguments; every method is a no-op."""

    kind = "other"
    real: type | None = None
    records: list[_Recorder] = []  # noqa: RUF012 - shared on purpose: the last test's pipelines

    def __class_getitem__(cls, _item: Any) -> type:  # EthosU55PipelineINT[input_t](...)
        return cls

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        self.arguments: dict[str, Any] = {}
        self.calls: list[str] = []
        if self.real is not None:
            try:
                bound = inspect.signature(self.real.__init__).bind(None, *args, **kwargs)
                self.arguments = dict(bound.arguments)
                self.arguments.pop(next(iter(bound.arguments)), None)  # self
            except TypeError:
                self.arguments = {"args": args, **kwargs}
        _Recorder.records.append(self)

        self.quantizer = _QuantizerRecorder()

    def __getattr__(self, name: str) -> _Sink:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Sink(self, name)


class _Sink:
    """Any attribute or call of a stand-in (`pipeline.tester.check_not`, `change_args(...)`):
    records the call on its pipeline and returns the pipeline."""

    def __init__(self, owner: _Recorder, name: str) -> None:
        self.owner = owner
        self.name = name

    def __getattr__(self, name: str) -> _Sink:
        if name.startswith("__"):
            raise AttributeError(name)
        return _Sink(self.owner, f"{self.name}.{name}")

    def __call__(self, *args: Any, **_kwargs: Any) -> _Recorder:
        self.owner.calls.append(self.name)
        config = getattr(args[1], "quantization_config", None) if len(args) > 1 else None
        if self.name == "change_args" and args[0] == "quantize" and config is not None:
            self.owner.quantizer.set_global(config)  # a Quantize stage with its own config
        return self.owner


class _QuantizerRecorder:
    """Stands in for `pipeline.quantizer`: records the configs a test sets on it."""

    def __init__(self) -> None:
        self.settings: list[tuple[str, Any, Any]] = []  # (method, target, config)

    @property
    def quantizer(self) -> _QuantizerRecorder:  # pipeline.quantizer.quantizer.set_global(...)
        return self

    def set_global(self, config: Any) -> _QuantizerRecorder:
        self.settings.append(("global", None, config))
        return self

    def set_io(self, config: Any) -> _QuantizerRecorder:
        self.settings.append(("io", None, config))
        return self

    def set_module_name(self, name: str, config: Any) -> _QuantizerRecorder:
        self.settings.append(("module", name, config))
        return self

    def set_module_type(self, kind: type, config: Any) -> _QuantizerRecorder:
        self.settings.append(("module", f"{kind.__module__}.{kind.__qualname__}", config))
        return self

    def __getattr__(self, name: str) -> Callable[..., Any]:
        if name.startswith("__"):
            raise AttributeError(name)

        def unknown(*_args: Any, **_kwargs: Any) -> _QuantizerRecorder:
            self.settings.append((name, None, None))
            return self

        return unknown


def _config_modes(config: Any) -> tuple[str, str | None]:
    """(activation mode or `none`, weight granularity or None) of an ExecuTorch config."""
    import torch

    if config is None:
        return "none", None
    act = config.input_activation or config.output_activation
    quant = "int16" if act is not None and act.dtype == torch.int16 else "int8"
    weight = config.weight
    if weight is None:
        return quant, None
    channel = weight.qscheme in (torch.per_channel_symmetric, torch.per_channel_affine)
    return quant, "per-channel" if channel else "per-tensor"


def _stand_in(real: type) -> type:
    kind = {
        "EthosU55PipelineINT": "int",
        "EthosU85PipelineINT": "int",
        "OpNotSupportedPipeline": "not-delegated",
    }
    return type(f"Recording{real.__name__}", (_Recorder,), {"kind": kind.get(real.__name__,
                "other"), "real": real})  # fmt: skip


def _patch(module: Any) -> None:
    """Replace every pipeline class the test module imported with a recording stand-in."""
    from executorch.backends.arm.test.tester.test_pipeline import BasePipeline

    for name, value in list(vars(module).items()):
        if isinstance(value, type) and (issubclass(value, BasePipeline) or name == "ArmTester"):
            setattr(module, name, _stand_in(value))


def _import(test_module: str) -> Any:
    module = importlib.import_module(f"{ET_TEST}.{test_module}")
    if not getattr(module, "_peer_suite_patched", False):
        _patch(module)
        module._peer_suite_patched = True
    return module


# ---------------------------------------------------------------------------------------------
# Collection.


def _xfail_reason(marks: Any) -> str | None:
    for mark in marks:
        if mark.name == "skip":
            return f"skip: {mark.kwargs.get('reason', '')}"
        if mark.name in ("xfail", "skipif"):
            condition = mark.kwargs.get("condition", mark.args[0] if mark.args else True)
            reason = str(mark.kwargs.get("reason", ""))
            if condition and FVP_XFAIL not in reason:
                return f"{mark.name}: {reason}"
    return None


def _parametrizations(fn: Callable) -> Iterator[tuple[tuple[str, ...], dict, str | None]]:
    """(ids, keyword arguments, ExecuTorch's xfail reason) per combination of its marks."""
    marks = [m for m in getattr(fn, "pytestmark", []) if m.name == "parametrize"]
    axes = []
    for mark in reversed(marks):  # decorators apply bottom-up; show the outermost first
        names = mark.args[0]
        names = [n.strip() for n in names.split(",")] if isinstance(names, str) else list(names)
        options = []
        for i, param in enumerate(mark.args[1]):
            values = getattr(param, "values", (param,) if len(names) == 1 else tuple(param))
            pid = getattr(param, "id", None) or str(i)
            options.append((pid, dict(zip(names, values, strict=True)),
                            _xfail_reason(getattr(param, "marks", ()))))  # fmt: skip
        axes.append(options)
    for combo in itertools.product(*axes):
        kwargs: dict = {}
        for _, values, _ in combo:
            kwargs.update(values)
        reason = next((r for _, _, r in combo if r), None)
        yield tuple(pid for pid, _, _ in combo), kwargs, reason


def _call(
    test_module: str, function: str, ids: tuple[str, ...], seed: int | None = None
) -> _Recorder:
    """Call the test function with the parametrization `ids`; its U55 pipeline's record."""
    import torch

    fn = getattr(_import(test_module), function)
    kwargs = next((kw for pids, kw, _ in _parametrizations(fn) if pids == ids), None)
    if kwargs is None:
        raise KeyError(f"{test_module}::{function}: no parametrization {ids}")
    _Recorder.records = []
    torch.manual_seed(SEED if seed is None else seed)
    try:
        fn(**kwargs)
    except Exception:
        if _Recorder.records and all(r.kind == "other" for r in _Recorder.records):
            names = sorted({type(r).__name__.removeprefix("Recording") for r in _Recorder.records})
            raise LookupError(f"the test drives {', '.join(names)} itself") from None
        if not _Recorder.records:
            raise  # else: the test went on past its pipeline (asserts on its results)
    records = [r for r in _Recorder.records if r.kind != "other"]
    if not records:
        others = sorted({type(r).__name__.removeprefix("Recording") for r in _Recorder.records})
        raise LookupError(
            f"the test built no EthosU55/85PipelineINT / OpNotSupportedPipeline "
            f"({', '.join(others) or 'nothing'})"
        )
    return records[-1]


def _is_for(fn_name: str, npu: str) -> bool:
    """A test function of the NPU family `npu` (u55: every u55 test; u85: its INT tests)."""
    name = fn_name.lower()
    return fn_name.startswith("test_") and npu in name and (npu == "u55" or "int" in name)


def _describe(case: Case, record: _Recorder, npu: str = "u55") -> None:
    args = record.arguments
    case.kind = record.kind
    case.module_class = type(args.get("module")).__qualname__
    case.calls = record.calls
    if record.kind == "int":
        case.quant = "int16" if args.get("a16w8_quantization") else "int8"
        case.weights = "per-channel" if args.get("per_channel_quantization", True) else "per-tensor"
        case.io = "symmetric" if args.get("symmetric_io_quantization") else "auto"
        keep = ("run_on_fvp", "atol", "rtol", "qtol", "exir_ops")
        for method, target, config in record.quantizer.settings:
            quant, weights = _config_modes(config)
            if method == "global":
                case.quant, case.weights = quant, weights or case.weights
            elif method == "io":
                case.io = "symmetric"
            elif method == "module":
                case.modules[target] = quant
            else:
                case.unmapped.append(f"quantizer.{method}")
    else:
        case.cpu_ops = sorted(args.get("non_delegated_ops") or {})
        if npu != "u55":
            case.et_xfail = f"not an {npu.upper()} INT pipeline ({type(record).__name__})"
        elif not args.get("u55_subset"):
            case.et_xfail = "not a U55 check (u55_subset=False)"
        elif not args.get("quantize"):
            case.et_xfail = "a float (unquantized) check: the SDK deploys quantized programs"
        keep = ("n_expected_delegates", "quantize")
    case.options = {k: _plain(args[k]) for k in keep if k in args}


def _plain(value: Any) -> Any:
    return value if isinstance(value, int | float | str | bool | type(None)) else repr(value)


def collect(first: bool, match: str | None = None, npu: str = "u55") -> list[Case]:
    """Every U55 (`npu="u85"`: U85 INT) test call of the wheel's suites (the first
    parametrization only: `first`)."""
    package = importlib.import_module(ET_TEST)
    cases: list[Case] = []
    for suite in SUITES:
        folder = Path(next(iter(package.__path__))) / suite
        for info in sorted(pkgutil.iter_modules([str(folder)]), key=lambda i: i.name):
            name = f"{suite}.{info.name}"
            if not info.name.startswith("test_") or (match and match not in name):
                continue
            try:
                module = _import(name)
            except Exception as exc:  # a test module the wheel cannot import here
                cases.append(Case(name, "<import>", (), collect_error=one_line(exc)))
                continue
            for fn_name, fn in sorted(vars(module).items()):
                if not (_is_for(fn_name, npu) and callable(fn)):
                    continue
                fn_reason = _xfail_reason(
                    [m for m in getattr(fn, "pytestmark", []) if m.name != "parametrize"]
                )
                for ids, _, reason in _parametrizations(fn):
                    case = Case(name, fn_name, ids, et_xfail=fn_reason or reason)
                    try:
                        _describe(case, _call(name, fn_name, ids), npu)
                    except Exception as exc:
                        case.collect_error = one_line(exc)
                    cases.append(case)
                    if first:
                        break
    return cases


# ---------------------------------------------------------------------------------------------
# Rebuilding a case in a model file, and deploying it.


def rebuild(
    test_module: str, function: str, ids: tuple[str, ...], seed: int = SEED
) -> tuple[Any, tuple]:
    """The module and example inputs the test gives its pipeline (for case_N.py files).
    Non-tensor arguments (scalars, dims) and tensors inside lists (cat's) are bound into a
    wrapper whose inputs are the tensors alone: the SDK's model inputs are tensors."""
    import torch

    record = _call(test_module, function, ids, seed)
    module, data = record.arguments["module"], record.arguments["test_data"]
    data = data if isinstance(data, tuple) else (data,)
    if all(isinstance(x, torch.Tensor) for x in data):
        return module, data
    tensors: list[torch.Tensor] = []
    return _bind(module, _template(data, tensors)), tuple(tensors)


class _Slot(int):
    """A tensor's place among the wrapper's inputs, inside the test's argument structure."""


def _template(value: Any, tensors: list) -> Any:
    import torch

    if isinstance(value, torch.Tensor):
        tensors.append(value)
        return _Slot(len(tensors) - 1)
    if isinstance(value, list | tuple):
        return type(value)(_template(v, tensors) for v in value)
    return value


def _fill(value: Any, tensors: tuple) -> Any:
    if isinstance(value, _Slot):
        return tensors[value]
    if isinstance(value, list | tuple):
        return type(value)(_fill(v, tensors) for v in value)
    return value


def _bound_class() -> type:
    import torch

    class Bound(torch.nn.Module):
        """Calls `inner` with the test's arguments, its tensors taken from the inputs."""

        def __init__(self, inner: torch.nn.Module, template: tuple) -> None:
            super().__init__()
            self.inner = inner
            self.template = template

        def forward(self, *tensors: torch.Tensor) -> Any:
            return self.inner(*_fill(self.template, tensors))

    return Bound


def _bind(module: Any, template: tuple) -> Any:
    """The wrapper, its class made on first use (torch is imported only with a model)."""
    return _bound_class()(module, template)


CASE_FILE = '''"""Peer suite case: ExecuTorch's {name} (written by bench/peer_suite.py)."""

import sys

sys.path.insert(0, {repo!r})

from bench.peer_suite import rebuild  # noqa: E402

_MODULE, _INPUTS = rebuild({module!r}, {function!r}, {ids!r}, {seed!r})


def model():
    return _MODULE


def example_inputs():
    return _INPUTS
'''


def case_file(case: Case, seed: int = SEED) -> str:
    """The model file that rebuilds `case` (its module and inputs) with `seed`."""
    return CASE_FILE.format(
        name=case.name, repo=str(REPO), module=case.test_module, function=case.function,
        ids=case.ids, seed=seed,
    )  # fmt: skip


def run_case(index: int, case: Case, workdir: Path, cache: Any, seed: int = SEED) -> Outcome:
    """Deploy one case on Corstone-300 (QEMU + virtual NPU) and classify the result."""
    from sdk.deploy.pipeline import deploy
    from sdk.deploy.verdict import HOST_MISMATCH
    from sdk.errors import MismatchError, SdkError
    from sdk.export.quant_options import QuantOptions

    folder = workdir / f"case_{index:04d}"
    folder.mkdir(parents=True, exist_ok=True)
    model_file = folder / "model.py"
    text = case_file(case, seed)
    if not model_file.is_file() or model_file.read_text() != text:
        model_file.write_text(text)
    out = Outcome(case.name, case.test_module, "pass")
    out.report = str(folder / "deploy" / "deploy.json")
    start = time.monotonic()
    try:
        report = deploy(
            str(model_file), board="corstone300", quant=case.quant,
            quant_options=QuantOptions(weights=case.weights, io=case.io, modules=case.modules),
            tolerance=tolerance_of(case.options), outdir=folder / "deploy", cache=cache,
        )  # fmt: skip
        out.cpu_ops_placed = [c["op"] for c in report.placement.get("cpu", [])]
        placed = {_op_base(op) for op in out.cpu_ops_placed}
        # Edge operators only: a higher-order op (torch.cond) is control flow, not a kernel.
        edge_ops = [op for op in case.cpu_ops if op.startswith(EDGE)]
        delegated = [op for op in edge_ops if _op_base(op) not in placed]
        note = f"ExecuTorch expects on the CPU, delegated here: {delegated}" if delegated else ""
        if not report.passed:
            failure = report.failure or "no outputs compared"
            out.outcome = "mismatch" if failure.startswith(HOST_MISMATCH) else "quality"
            out.detail = failure
        out.detail = "; ".join(x for x in (out.detail, note) if x)
    except MismatchError as exc:
        out.outcome, out.detail = "mismatch", one_line(exc)
    except SdkError as exc:
        out.outcome, out.detail = "refused", _first_clause(exc)
    except Exception as exc:
        out.outcome, out.detail = "traceback", traceback_detail(exc)
    out.seconds = round(time.monotonic() - start, 1)
    return out


def tolerance_of(options: dict) -> Any:
    """The case's own tolerances (its pipeline's atol/rtol/qtol) as the deploy's verdict; the
    rest are ExecuTorch's U55 INT defaults, which sdk.evaluation.accuracy.Tolerance holds."""
    from sdk.evaluation.accuracy import Tolerance

    given = {k: float(options[k]) for k in ("atol", "rtol", "qtol") if k in options}
    return Tolerance(**given)


EDGE = "executorch_exir_dialects_edge__ops_"  # how ExecuTorch's tests name an edge operator


def _op_base(op: str) -> str:
    """One name for an operator as ExecuTorch's tests name it (an edge op's graph name,
    `executorch_exir_dialects_edge__ops_aten_where_self`) and as a CPU kernel is named
    (`aten::where.self_out`): `aten_where_self`; an `out` overload is `default`."""
    if "::" in op:
        namespace, _, rest = op.partition("::")
        name, _, overload = rest.partition(".")
        overload = overload.removesuffix("out").removesuffix("_") or "default"
        return f"{namespace}_{name}_{overload}"
    return op.removeprefix(EDGE)


def one_line(exc: BaseException) -> str:
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {text[0] if text else ''}"[:300]


def traceback_detail(exc: BaseException) -> str:
    """An unexpected exception in one line, with where it was raised (an SDK bug to find)."""
    frame = traceback.extract_tb(exc.__traceback__)[-1]
    return f"{one_line(exc)} ({Path(frame.filename).name}:{frame.lineno})"


def _first_clause(exc: BaseException) -> str:
    """The refusal's name: its first line up to the first `;` (the rest is advice)."""
    text = str(exc).strip().splitlines()
    return f"{type(exc).__name__}: {(text[0] if text else '').split('; ')[0]}"[:200]


# ---------------------------------------------------------------------------------------------
# Reporting.


def print_cases(cases: list[Case]) -> None:
    for i, case in enumerate(cases):
        status = (
            f"ET-XFAIL {case.et_xfail}" if case.et_xfail
            else f"COLLECT-ERROR {case.collect_error}" if case.collect_error
            else f"{case.kind} {case.quant} {case.weights} io={case.io}"
            + (f" cpu={','.join(case.cpu_ops)}" if case.cpu_ops else "")
            + (f" modules={case.modules}" if case.modules else "")
            + (f" UNMAPPED={','.join(case.unmapped)}" if case.unmapped else "")
        )  # fmt: skip
        print(f"{i:4d} {case.name} [{case.module_class}] {status}")
    runnable = [c for c in cases if not (c.collect_error or c.et_xfail)]
    kinds = Counter((c.kind, c.quant) for c in runnable)
    print(f"\n{len(cases)} cases: {len(runnable)} runnable "
          f"({', '.join(f'{k} {q}: {n}' for (k, q), n in sorted(kinds.items()))}), "
          f"{sum(1 for c in cases if c.et_xfail)} ExecuTorch xfail/skip, "
          f"{sum(1 for c in cases if c.collect_error and not c.et_xfail)} not collectable; "
          f"{len({c.test_module for c in cases})} test modules")  # fmt: skip


def print_results(outcomes: list[Outcome]) -> None:
    per_op: dict[str, Counter] = defaultdict(Counter)
    for o in outcomes:
        per_op[o.test_module][o.outcome] += 1
    print("\n| test module | " + " | ".join(OUTCOMES) + " |")
    print("|---|" + "---|" * len(OUTCOMES))
    for op, counts in sorted(per_op.items()):
        print(f"| {op} | " + " | ".join(str(counts[k]) for k in OUTCOMES) + " |")
    total = Counter(o.outcome for o in outcomes)
    print("| **all** | " + " | ".join(str(total[k]) for k in OUTCOMES) + " |")
    rate = 100 * total["pass"] / len(outcomes) if outcomes else 0.0
    print(f"\npass rate: {total['pass']}/{len(outcomes)} = {rate:.0f} %")
    for o in outcomes:
        if o.outcome != "pass":
            print(f"  {o.outcome}: {o.case}: {o.detail}")


def _shard(text: str) -> tuple[int, int]:
    k, _, n = text.partition("/")
    if not (k.isdigit() and n.isdigit() and 1 <= int(k) <= int(n)):
        raise argparse.ArgumentTypeError(f"{text}: give K/N with 1 <= K <= N")
    return int(k), int(n)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    which = parser.add_mutually_exclusive_group()
    which.add_argument("--first", action="store_true", help="first parametrization per test")
    which.add_argument("--all", action="store_true", help="every parametrization (default)")
    parser.add_argument("--shard", type=_shard, help="K/N: every N-th runnable case from K")
    parser.add_argument("--limit", type=int, help="run at most N cases")
    parser.add_argument("--match", help="test modules whose name contains this (e.g. test_add)")
    parser.add_argument("--list", action="store_true", help="collect and print; run nothing")
    parser.add_argument("--json", type=Path, help="write cases and outcomes here")
    parser.add_argument("--workdir", type=Path, default=REPO / "out" / "peer_suite")
    parser.add_argument("--cache-dir", type=Path, help="the SDK cache (default: sdk's)")
    parser.add_argument("--rerun", type=Path, nargs="+", help="earlier --json files: their passes "
                        "stand, the other selected cases run; one report")  # fmt: skip
    parser.add_argument("--sample", type=int, help="N runnable cases drawn at random (--seed)")
    parser.add_argument("--seed", type=int, default=SEED,
                        help=f"seeds --sample and the cases' data (default {SEED})")  # fmt: skip
    parser.add_argument(
        "--case",
        action="append",
        default=[],
        metavar="NAME",
        help="run this case (as --list names it), ExecuTorch xfail or not",
    )
    args = parser.parse_args(argv)
    warnings.filterwarnings("ignore")
    sys.path.insert(0, str(REPO))

    cases = collect(args.first, args.match)
    if args.list:
        print_cases(cases)
        if args.json:
            args.json.write_text(json.dumps([asdict(c) for c in cases], indent=2) + "\n")
        return 0
    from sdk.cache import Cache

    runnable = [(i, c) for i, c in enumerate(cases) if not (c.collect_error or c.et_xfail)]
    if args.case:
        named = {c.name: (i, c) for i, c in enumerate(cases)}
        unknown = [n for n in args.case if n not in named]
        if unknown:
            parser.error(f"no such case: {', '.join(unknown)}")
        runnable = [named[n] for n in args.case]
    if args.sample is not None:
        drawn = random.Random(args.seed).sample(runnable, min(args.sample, len(runnable)))
        runnable = sorted(drawn, key=lambda pair: pair[0])
    if args.shard:
        k, n = args.shard
        runnable = runnable[k - 1 :: n]
    outcomes: list[Outcome] = []
    if args.rerun:
        earlier = [Outcome(**o) for f in args.rerun for o in json.loads(f.read_text())["outcomes"]]
        outcomes = [o for o in earlier if o.outcome == "pass"]
        passed = {o.case for o in outcomes}
        runnable = [(i, c) for i, c in runnable if c.name not in passed]
    if args.limit is not None:
        runnable = runnable[: args.limit]
    cache = Cache(args.cache_dir)
    for i, case in runnable:
        outcome = run_case(i, case, args.workdir.resolve(), cache, args.seed)
        outcomes.append(outcome)
        print(f"{outcome.outcome:9s} {outcome.seconds:6.1f}s {case.name} {case.quant} "
              f"{case.weights} {outcome.detail}", flush=True)  # fmt: skip
        if args.json:
            args.json.write_text(json.dumps({
                "cases": [asdict(c) for c in cases],
                "outcomes": [asdict(o) for o in outcomes],
            }, indent=2) + "\n")  # fmt: skip
    print_results(outcomes)
    return 0


if __name__ == "__main__":
    # One module object for the runner and the case files' `rebuild` (one set of stand-ins).
    sys.path.insert(0, str(REPO))
    from bench.peer_suite import main as _main

    sys.exit(_main())
