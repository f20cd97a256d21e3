"""Chapter 08 §8's C++ side (minikernel/course/libtorch_build.py, cpp/libtorch_side.cpp):
the TorchScript file loaded by ``torch::jit::load`` computes what Python computes, and the
C++ frontend's SGD losses are torch's. torch in Python is the oracle. Without ``g++`` the
tests that build are skipped (not passed); the no-compiler path and the recorded outputs
the chapter falls back on are checked either way. No exercise: these pass in both modes."""
from __future__ import annotations

import shutil
import warnings

import pytest
import torch

from minikernel import saving
from minikernel.course import libtorch_build

NEEDS_GXX = pytest.mark.skipif(shutil.which("g++") is None, reason="g++ not found: the libtorch program cannot be built")
BUILD_TIMEOUT = pytest.mark.timeout(libtorch_build.BUILD_TIMEOUT_S + 60)


def chapter_model() -> torch.jit.ScriptModule:
    """The module chapter 08 saves as wrapped_rnn.pt: WrapRNN traced after manual_seed(0)."""
    torch.manual_seed(0)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        return torch.jit.trace(saving.WrapRNN(), torch.rand(10, 3, 4))


def torch_losses(steps: int, lr: float) -> list[float]:
    """The C++ program's training, written with torch: seed 0, randn data, Linear(3, 1), SGD on MSE."""
    with torch.random.fork_rng():
        torch.manual_seed(0)
        x = torch.randn(8, 3)
        y = x @ torch.tensor([[1.0], [-2.0], [0.5]]) + 0.3
        linear = torch.nn.Linear(3, 1)
        opt = torch.optim.SGD(linear.parameters(), lr=lr)
        losses = []
        for _ in range(steps):
            opt.zero_grad()
            loss = ((linear(x) - y) ** 2).mean()
            loss.backward()
            opt.step()
            losses.append(loss.item())
    return losses


@pytest.fixture(scope="module")
def model_file(tmp_path_factory):
    path = tmp_path_factory.mktemp("libtorch") / "wrapped_rnn.pt"
    model = chapter_model()
    model.save(str(path))
    return model, path


@NEEDS_GXX
@BUILD_TIMEOUT
def test_the_program_builds_once_into_the_cache():
    first = libtorch_build.build()
    assert first.path is not None, first.reason
    stamp = first.path.stat().st_mtime_ns
    again = libtorch_build.build()
    assert again.path == first.path and again.path.stat().st_mtime_ns == stamp, "a second build must reuse the first"
    assert again.compiler.startswith("g++")


@NEEDS_GXX
@BUILD_TIMEOUT
def test_torch_jit_load_in_cpp_computes_what_python_computes(model_file):
    model, path = model_file
    x = torch.rand(7, 3, 4, generator=torch.Generator().manual_seed(3))
    result = libtorch_build.load_and_run(path, x)
    assert result.note is None, result.note
    out = libtorch_build.parse_tensor(result.text)
    expected = model(x)
    assert out.shape == expected.shape
    torch.testing.assert_close(out, expected, rtol=1e-5, atol=1e-6)
    # another input gives another answer, so the comparison above can fail
    other = libtorch_build.parse_tensor(libtorch_build.load_and_run(path, x.flip(0) * 2 - 1).text)
    assert not torch.allclose(other, expected, rtol=1e-3, atol=1e-4)
    torch.testing.assert_close(other, model(x.flip(0) * 2 - 1), rtol=1e-5, atol=1e-6)


@NEEDS_GXX
@BUILD_TIMEOUT
def test_the_file_carries_the_weights(tmp_path, model_file):
    model, _ = model_file
    torch.manual_seed(1)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DeprecationWarning)
        other_weights = torch.jit.trace(saving.WrapRNN(), torch.rand(10, 3, 4))
    other_weights.save(str(tmp_path / "wrapped_rnn.pt"))
    x = torch.rand(4, 3, 4, generator=torch.Generator().manual_seed(5))
    out = libtorch_build.parse_tensor(libtorch_build.load_and_run(tmp_path / "wrapped_rnn.pt", x).text)
    torch.testing.assert_close(out, other_weights(x), rtol=1e-5, atol=1e-6)
    assert not torch.allclose(out, model(x), rtol=1e-3, atol=1e-4)


@NEEDS_GXX
@BUILD_TIMEOUT
@pytest.mark.parametrize("steps, lr", [(5, 0.1), (8, 0.03)])
def test_cpp_frontend_sgd_losses_are_torchs(steps, lr):
    result = libtorch_build.train(steps, lr)
    assert result.note is None, result.note
    losses = libtorch_build.parse_losses(result.text)
    expected = torch_losses(steps, lr)
    assert len(losses) == steps
    torch.testing.assert_close(torch.tensor(losses), torch.tensor(expected), rtol=1e-5, atol=1e-7)
    assert losses[-1] < losses[0], "SGD on this convex problem must lower the loss"
    assert not torch.allclose(torch.tensor(losses), torch.tensor(torch_losses(steps, lr * 2)), rtol=1e-3)


@NEEDS_GXX
def test_a_failed_build_is_one_line(tmp_path):
    bad = tmp_path / "bad.cpp"
    bad.write_text("int main( {\n")
    built = libtorch_build.build(source=bad, cache=tmp_path / "cache")
    assert built.path is None
    assert built.reason.startswith("the build failed (g++ exit 1): ") and "\n" not in built.reason
    assert "full log: " in built.reason and (tmp_path / "cache").is_dir()


def test_without_a_compiler_build_says_so_in_one_line(monkeypatch, tmp_path):
    monkeypatch.setenv(libtorch_build.CXX_VAR, str(tmp_path / "no-such-g++"))
    built = libtorch_build.build(cache=tmp_path)
    assert built.path is None
    assert built.reason == (f"MINIKERNEL_CXX={tmp_path / 'no-such-g++'} not found: install a C++ compiler "
                            "(Debian: apt install g++) to build this")
    monkeypatch.delenv(libtorch_build.CXX_VAR)
    monkeypatch.setenv("PATH", str(tmp_path))
    assert libtorch_build.build(cache=tmp_path).reason.startswith("g++ not found: install a C++ compiler")
    assert list(tmp_path.iterdir()) == [], "nothing is built without a compiler"


def test_a_program_that_is_no_compiler_is_refused(monkeypatch, tmp_path):
    monkeypatch.setenv(libtorch_build.CXX_VAR, shutil.which("false") or "/bin/false")
    built = libtorch_build.build(cache=tmp_path)
    assert built.path is None and "--version failed" in built.reason


def test_without_a_compiler_the_chapters_requests_answer_from_the_recording(monkeypatch, tmp_path):
    monkeypatch.setenv("PATH", str(tmp_path))
    x = torch.rand(5, 3, 4, generator=torch.Generator().manual_seed(8))  # the chapter's input
    loaded = libtorch_build.load_and_run(tmp_path / "wrapped_rnn.pt", x)
    assert loaded.note.startswith("g++ not found: ") and "the output below was recorded on 20" in loaded.note
    torch.testing.assert_close(libtorch_build.parse_tensor(loaded.text), chapter_model()(x), rtol=1e-5, atol=1e-6)
    trained = libtorch_build.train(5, 0.1)
    assert "recorded on" in trained.note
    torch.testing.assert_close(torch.tensor(libtorch_build.parse_losses(trained.text)),
                               torch.tensor(torch_losses(5, 0.1)), rtol=1e-5, atol=1e-7)
    unrecorded = libtorch_build.train(6, 0.1)
    assert unrecorded.text == "" and unrecorded.note.endswith("; no output was recorded for this request")


def test_the_text_format_round_trips_float32_exactly():
    t = torch.randn(2, 3, 4, generator=torch.Generator().manual_seed(0)) * 1e3
    assert torch.equal(libtorch_build.parse_tensor(libtorch_build.tensor_text(t)), t)
    with pytest.raises(ValueError, match="expected a 'shape ...' line"):
        libtorch_build.parse_tensor("values 1 2\n")
    with pytest.raises(ValueError, match="expected a line 'losses ...'"):
        libtorch_build.parse_losses("shape 2\n")
    with pytest.raises(ValueError, match="steps must be at least 1"):
        libtorch_build.train(0, 0.1)
