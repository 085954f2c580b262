"""PyTorch training programs run on Lucid by renaming the import.

Each program in tests/programs is plain PyTorch code, as published with its
dataset download replaced by local or synthetic data (each file's header
says where it comes from and what changed): twelve pytorch/examples programs
(MNIST CNN and RNN, VAE, DCGAN, super-resolution, LBFGS sine waves,
word-level LM, forward-forward, regression, REINFORCE, actor-critic, Siamese
network), five PyTorch tutorials (nn_tutorial, the TransformerEncoder LM,
seq2seq and nn.Transformer translation, EmbeddingBag text classification),
minGPT's adder, a nanoGPT-style trainer, and makemore-style and
packed-sequence language models. tests/programs/run.py runs each with
`torch` resolving to `lucid`:

- as is, with Lucid's own random numbers: it must finish;
- with SHARED_RANDOM (initialisation, noise, dropout masks, shuffling and
  Python's random module drawn from one NumPy stream in both libraries),
  next to the same run under PyTorch: the losses it prints must agree. (Dropout inside PyTorch's C++
  LSTM/GRU cannot come from the shared stream: those comparisons run with
  --dropout 0.)
"""
import os
import re
import subprocess
import sys

import pytest

pytest.importorskip("torch")

HERE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "programs")
RUN = os.path.join(HERE, "run.py")
# "loss 4.25", "Loss: 0.3", "Loss_D: 1.2 Loss_G: 0.9", "loss: 0.001": every number after a loss label.
LOSS = re.compile(r"loss[^\d\-+]{0,12}?([-+]?\d+\.\d+(?:e[-+]?\d+)?)", re.I)
# Programs whose printed numbers are not all labelled "loss" say what to compare instead.
REWARD_AND_LOSS = re.compile(r"(?:reward|loss)[^\d\-+]{0,12}?([-+]?\d+\.\d+(?:e[-+]?\d+)?)", re.I)
ACCURACY_AND_LOSS = re.compile(r"(?:accuracy|loss)[^\d\-+]{0,12}?([-+]?\d+\.\d+(?:e[-+]?\d+)?)", re.I)
EVERY_DECIMAL = re.compile(r"(?<![\w.])([-+]?\d+\.\d+(?:e[-+]?\d+)?)")

PROGRAMS = {
    "mnist_cnn": ["mnist_cnn.py", "--train-size", "96", "--test-size", "64", "--batch-size", "32", "--epochs", "2",
                  "--log-interval", "1"],
    "mnist_rnn": ["mnist_rnn.py", "--train-size", "96", "--test-size", "64", "--batch-size", "32", "--epochs", "1",
                  "--log-interval", "1"],
    "char_rnn": ["char_rnn.py", "--type", "rnn", "--max-steps", "4", "--eval-interval", "2"],
    "char_gru": ["char_rnn.py", "--type", "gru", "--max-steps", "4", "--eval-interval", "2"],
    "char_lstm": ["char_rnn.py", "--type", "lstm", "--max-steps", "4", "--eval-interval", "2"],
    "vae": ["vae.py", "--train-size", "256", "--batch-size", "64", "--epochs", "1", "--log-interval", "1"],
    "dcgan": ["dcgan.py", "--ngf", "8", "--ndf", "8", "--batchSize", "4", "--num-images", "12", "--niter", "1",
              "--manualSeed", "1"],
    "super_resolution": ["super_resolution.py", "--upscale_factor", "3", "--batchSize", "8", "--num-images", "16",
                         "--nEpochs", "1", "--crop-size", "24"],
    "lbfgs_sine": ["lbfgs_sine.py", "--steps", "2", "--length", "40", "--waves", "12", "--future", "10"],
    "word_lm_lstm": ["word_lm.py", "--model", "LSTM", "--emsize", "16", "--nhid", "16", "--epochs", "2",
                     "--max-batches", "3", "--log-interval", "1", "--bptt", "10", "--dropout", "0"],
    "word_lm_transformer": ["word_lm.py", "--model", "Transformer", "--emsize", "16", "--nhid", "16", "--epochs", "1",
                            "--max-batches", "3", "--log-interval", "1", "--bptt", "10", "--nlayers", "1"],
    "word_lm_packed_lstm": ["word_lm_packed.py", "--epochs", "1", "--max-batches", "3", "--emsize", "16", "--nhid",
                            "16"],
    "word_lm_packed_gru": ["word_lm_packed.py", "--model", "GRU", "--epochs", "1", "--max-batches", "3", "--emsize",
                           "16", "--nhid", "16"],
    "gpt": ["gpt.py", "--max_iters", "4", "--log_interval", "1", "--eval_interval", "2", "--eval_iters", "2",
            "--n_layer", "2", "--n_embd", "32", "--block_size", "16", "--batch_size", "4",
            "--gradient_accumulation_steps", "2", "--warmup_iters", "2", "--lr_decay_iters", "4"],
    "regression": ["regression.py"],
    "forward_forward": ["forward_forward.py", "--epochs", "3", "--log-interval", "1", "--train_size", "64",
                        "--test_size", "32", "--hidden", "32"],
    "nn_tutorial": ["nn_tutorial.py", "--train-size", "256", "--valid-size", "128"],
    "transformer_lm": ["transformer_lm.py", "--emsize", "32", "--d_hid", "32", "--bptt", "16", "--epochs", "2",
                       "--log_interval", "1", "--max_batches", "3"],
    "reinforce": ["reinforce.py", "--episodes", "30", "--log-interval", "3"],
    "actor_critic": ["actor_critic.py", "--episodes", "24", "--log-interval", "3"],
    "siamese_network": ["siamese_network.py", "--train-size", "24", "--test-size", "20", "--batch-size", "8",
                        "--test-batch-size", "10", "--epochs", "2", "--log-interval", "1", "--lr", "0.02"],
    "seq2seq_translation": ["seq2seq_translation.py", "--hidden-size", "32", "--batch-size", "16", "--epochs", "6",
                            "--print-every", "1", "--evaluate", "3"],
    "translation_transformer": ["translation_transformer.py", "--emb-size", "32", "--nhead", "4", "--ffn-hid-dim",
                                "32", "--batch-size", "8", "--layers", "2", "--epochs", "3"],
    "text_classification": ["text_classification.py", "--train-size", "400", "--test-size", "100", "--epochs", "3",
                            "--batch-size", "16", "--log-interval", "5"],
    "mingpt_adder": ["mingpt_adder.py", "--data.ndigit=1", "--trainer.max_iters=30", "--trainer.batch_size=16",
                     "--system.log_every=2", "--system.eval_every=15"],
}
METRIC = {"reinforce": REWARD_AND_LOSS, "actor_critic": REWARD_AND_LOSS, "nn_tutorial": EVERY_DECIMAL,
          "seq2seq_translation": EVERY_DECIMAL, "text_classification": ACCURACY_AND_LOSS}
# The regression runs 200 steps: float32 rounding makes the traces drift
# apart slowly, so its first 20 losses are compared. The Siamese network's
# first epoch (three steps and the test loss) is compared: its BatchNorm
# layers see 1x1 maps of a batch of 8 in the deepest block, whose gradients
# are float32 noise in PyTorch too (against float64), and Adadelta turns that
# noise into full-size steps.
COMPARE_FIRST = {"regression": 20, "siamese_network": 4}
# Two groups, one test each: one process per library runs a whole group, so
# PyTorch is imported once per group.
GROUPS = {
    "vision": ["mnist_cnn", "mnist_rnn", "vae", "dcgan", "super_resolution", "lbfgs_sine", "regression",
               "forward_forward"],
    "language": ["char_rnn", "char_gru", "char_lstm", "word_lm_lstm", "word_lm_transformer", "word_lm_packed_lstm",
                 "word_lm_packed_gru", "gpt"],
    "tutorials": ["nn_tutorial", "transformer_lm", "reinforce", "actor_critic", "seq2seq_translation",
                  "translation_transformer"],
    "more": ["siamese_network", "mingpt_adder", "text_classification"],
}
FRAME = re.compile(r"^##### begin (\S+)\n(.*?)^##### end \1: (ok|.*?)(?=^##### begin |\Z)", re.M | re.S)


def run(lib, names, shared=None, timeout=900):
    """Runs the programs `names` in one process; -> {name: (output, 'ok' or the traceback)}."""
    cmd = [sys.executable, RUN, lib]
    for i, name in enumerate(names):
        args = PROGRAMS[name]
        cmd += (["--then"] if i else []) + [os.path.join(HERE, args[0]), *args[1:]]
    env = dict(os.environ, LUCID_NUM_THREADS="1", OMP_NUM_THREADS="1", PYTHONWARNINGS="ignore")
    if shared is not None:
        env["SHARED_RANDOM"] = str(shared)
    proc = subprocess.run(cmd, capture_output=True, text=True, timeout=timeout, env=env, cwd=HERE)
    frames = FRAME.findall(proc.stdout)
    assert len(frames) == len(names), f"{lib}: expected {len(names)} framed outputs:\n{proc.stdout[-3000:]}\n" \
                                      f"{proc.stderr[-3000:]}"
    return {name: (out, status.strip()) for name, (_, out, status) in zip(names, frames)}


def losses(out, name=None):
    pattern = METRIC.get(name, LOSS)
    return [float(v) for line in out.splitlines() for v in pattern.findall(line)]


def compare(name, ours, theirs):
    """-> a description of the first disagreement, or None."""
    if not theirs:
        return f"{name}: printed no losses"
    if len(ours) != len(theirs):
        return f"{name}: {len(ours)} losses vs PyTorch's {len(theirs)}"
    for i, (a, b) in enumerate(list(zip(ours, theirs))[:COMPARE_FIRST.get(name, len(theirs))]):
        # Printed with 4-6 decimals: the last digit may round either way.
        if abs(a - b) > 2e-5 * max(1.0, abs(b)) + 2e-6:
            return f"{name}: loss {i}: lucid {a} vs torch {b}\n  lucid {ours}\n  torch {theirs}"
    return None


@pytest.mark.parametrize("group", list(GROUPS))
def test_programs_run_unchanged_and_match_torch(group):
    names = GROUPS[group]
    plain = run("lucid", names)  # Lucid's own random numbers: each program must finish
    ours, theirs = run("lucid", names, shared=1), run("torch", names, shared=1)
    problems = []
    for name in names:
        for label, result in (("lucid", plain[name]), ("lucid (shared random)", ours[name]),
                              ("torch (shared random)", theirs[name])):
            if result[1] != "ok":
                problems.append(f"{name} under {label} raised:\n{result[1]}")
        if ours[name][1] == theirs[name][1] == "ok":
            problem = compare(name, losses(ours[name][0], name), losses(theirs[name][0], name))
            if problem:
                problems.append(problem)
    assert not problems, "\n\n".join(problems)


def test_gpt_with_torch_compile_matches_the_uncompiled_run():
    # model = torch.compile(model), then model.train()/eval() and calls: training forwards run
    # eagerly (autograd is recording), evaluation forwards compiled.
    PROGRAMS["gpt_compiled"] = PROGRAMS["gpt"] + ["--compile", "1"]
    out = run("lucid", ["gpt", "gpt_compiled"], shared=1)
    assert out["gpt"][1] == "ok" and out["gpt_compiled"][1] == "ok", out
    problem = compare("gpt_compiled", losses(out["gpt_compiled"][0]), losses(out["gpt"][0]))
    assert problem is None, problem
