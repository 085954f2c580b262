"""The examples run end to end as scripts and print their final metric.

Each runs as a subprocess with tiny settings (seconds), in both the fused and
the eager mode; train_mlp.py also runs once with its defaults, which the
README promises reach over 95% test accuracy in well under a minute.
"""
import os
import re
import subprocess
import sys

import pytest

EXAMPLES = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "examples")
ACCURACY = re.compile(r"^test accuracy: (\d\.\d+)$", re.M)
VAL_LOSS = re.compile(r"^final val loss: (\d+\.\d+) \(perplexity (\d+\.\d+)\)$", re.M)

# Importing tqdm fails in the child, as when the "examples" extra is absent.
_NO_TQDM = ("import runpy, sys; sys.modules['tqdm'] = None; path = sys.argv[1]; sys.argv = sys.argv[1:]; "
            "runpy.run_path(path, run_name='__main__')")


def run_example(script, *args, timeout=120, tqdm=True):
    path = os.path.join(EXAMPLES, script)
    cmd = [sys.executable, path, *args] if tqdm else [sys.executable, "-c", _NO_TQDM, path, *args]
    # One thread per example: the test workers already occupy the cores.
    env = dict(os.environ, LUCID_NUM_THREADS="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env)
    assert proc.returncode == 0, f"{script} {' '.join(args)} exited {proc.returncode}:\n{proc.stdout}\n{proc.stderr}"
    return proc.stdout


def accuracy_of(out):
    m = ACCURACY.search(out)
    assert m, f"no 'test accuracy:' line in:\n{out}"
    return float(m.group(1))


@pytest.mark.parametrize("mode", [[], ["--eager"]], ids=["fused", "eager"])
def test_mlp_tiny(mode, tmp_path):
    pytest.importorskip("sklearn")
    ckpt = tmp_path / "mlp.lucid"
    out = run_example("train_mlp.py", "--epochs", "2", "--checkpoint", str(ckpt), *mode)
    assert 0.0 <= accuracy_of(out) <= 1.0
    assert "saved and reloaded" in out and ckpt.is_file()


def test_mlp_without_tqdm_prints_each_epoch():
    pytest.importorskip("sklearn")
    out = run_example("train_mlp.py", "--epochs", "2", tqdm=False)
    assert re.search(r"^epoch +1/2 +loss \d+\.\d+ +test acc \d\.\d+$", out, re.M), out
    assert re.search(r"^epoch +2/2 ", out, re.M), out
    accuracy_of(out)


def test_mlp_defaults_reach_95_percent():
    """The README's main job: default settings, > 95% test accuracy, < 60 s."""
    pytest.importorskip("sklearn")
    out = run_example("train_mlp.py", timeout=60)
    assert accuracy_of(out) > 0.95, out


@pytest.mark.parametrize("mode", [[], ["--eager"]], ids=["fused", "eager"])
def test_cnn_tiny(mode):
    pytest.importorskip("sklearn")
    out = run_example("train_cnn.py", "--epochs", "1", *mode)
    assert 0.0 <= accuracy_of(out) <= 1.0


@pytest.mark.parametrize("mode", [[], ["--eager"], ["--amp"], ["--amp", "--eager"]],
                         ids=["fused", "eager", "fused-amp", "eager-amp"])
def test_char_gpt_tiny(mode):
    out = run_example("char_gpt.py", "--epochs", "2", "--steps-per-epoch", "3", "--d-model", "32", "--layers", "1",
                      "--block-size", "16", "--sample-len", "20", *mode)
    assert len(re.findall(r"^epoch \d+: train loss \d+\.\d+ +val loss \d+\.\d+", out, re.M)) == 2, out
    m = VAL_LOSS.search(out)
    assert m, f"no 'final val loss:' line in:\n{out}"
    # An untrained model over ~75 characters sits near log(75) = 4.3.
    assert 0.0 < float(m.group(1)) < 6.0
    assert "--- sample" in out


def test_char_gpt_steps_caps_training():
    out = run_example("char_gpt.py", "--epochs", "5", "--steps-per-epoch", "2", "--steps", "3", "--d-model", "32",
                      "--layers", "1", "--block-size", "16", "--sample-len", "10", "--temperature", "0", tqdm=False)
    assert "trained 3 steps" in out, out
    assert len(re.findall(r"^epoch \d+:", out, re.M)) == 2, out


@pytest.mark.parametrize("mode", [["--cell", "lstm"], ["--cell", "lstm", "--eager"], ["--cell", "gru"]],
                         ids=["lstm-fused", "lstm-eager", "gru-fused"])
def test_char_rnn_tiny(mode):
    out = run_example("char_rnn.py", "--epochs", "2", "--steps-per-epoch", "3", "--hidden", "32", "--layers", "2",
                      "--block-size", "16", "--sample-len", "20", *mode)
    assert len(re.findall(r"^epoch \d+: train loss \d+\.\d+ +val loss \d+\.\d+", out, re.M)) == 2, out
    m = VAL_LOSS.search(out)
    assert m, f"no 'final val loss:' line in:\n{out}"
    assert 0.0 < float(m.group(1)) < 6.0  # an untrained model sits near log(75) = 4.3
    assert "--- sample" in out


FINAL_LOSS = re.compile(r"^final loss: (\d+\.\d+)$", re.M)


@pytest.mark.parametrize("bf16", [[], ["--bf16"]], ids=["float32", "bf16"])
def test_train_gpt_compiled_equals_its_eager_loop(bf16):
    """examples/train_gpt.py: the compiled step (accumulation, clipping,
    AdamW groups, schedule) ends where its eager loop does."""
    args = ["--steps", "4", "--accum", "2", "--batch-size", "2", "--block-size", "8", "--d-model", "16",
            "--layers", "1", "--heads", "2", "--warmup", "1", *bf16]
    losses = [float(FINAL_LOSS.search(run_example("train_gpt.py", "--mode", mode, *args)).group(1))
              for mode in ("compiled", "eager")]
    assert abs(losses[0] - losses[1]) <= 2e-4 * abs(losses[1]), losses
