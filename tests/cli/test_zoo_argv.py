"""A zoo's per-model command line (sdk.deploy.zoo.per_model_argv) and its refusals."""

from __future__ import annotations

import pytest

from sdk.cli.main import main
from sdk.deploy.zoo import per_model_argv


def test_each_deploy_gets_the_zoo_options_but_not_its_own():
    argv = [
        "--debug", "deploy", "a.py", "b.py:Net", "--target", "labgrid", "--places", "p1,p2",
        "-o", "out", "--json", "z.json", "--junit=z.xml", "--quant", "int16", "--quiet",
        "--timeout", "30",
    ]  # fmt: skip
    assert per_model_argv(argv, ["a.py", "b.py:Net"]) == [
        "--debug", "deploy", "--target", "labgrid", "--quant", "int16", "--timeout", "30",
    ]  # fmt: skip


def test_deploy_takes_no_abbreviated_option(tmp_path, capsys):
    """An abbreviation (--out for --outdir) would reach every deploy of a zoo unseen."""
    with pytest.raises(SystemExit) as exit_:
        main(["deploy", "a.py", "--out", str(tmp_path / "x")])
    assert exit_.value.code == 2 and "unrecognized arguments: --out" in capsys.readouterr().err


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--target", "qemu", "--places", "p1"], "--places takes the place of --place"),
        (["--target", "labgrid", "--place", "p0", "--places", "p1"], "--places takes the place"),
        (["--target", "labgrid", "--places", " , "], "no place named"),
        (["--target", "labgrid", "--places", "p1", "--drive", "/x"], "--drive/--probe name one"),
        (["--target", "labgrid", "--places", "p1,p1"], "--places names a place twice"),
    ],
)
def test_a_zoo_refuses_what_it_cannot_do_in_one_line(tmp_path, capsys, extra, message):
    code = main(["deploy", "a.py", "b.py", "-o", str(tmp_path / "z"), *extra])
    err = capsys.readouterr().err
    assert code != 0 and message in err, err
    assert not (tmp_path / "z" / "zoo.json").exists()
