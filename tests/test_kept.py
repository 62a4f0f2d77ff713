"""Recordings and estimates kept on disk (fastlstm_lib/course/kept.py): read back whole and equal, made
again when a file is damaged or holds something else, never kept for other code, and never in
the way (switched off, or nowhere to write)."""

import pytest

import fastlstm_lib as fl
from fastlstm_lib.course import kept, lesson
from fastlstm_lib.course.profile import record


@pytest.fixture
def cache(tmp_path, monkeypatch):
    monkeypatch.setenv("FASTLSTM_CACHE", str(tmp_path))
    monkeypatch.delenv("FASTLSTM_DISK_CACHE", raising=False)
    return tmp_path


class Maker:
    def __init__(self, value):
        self.value, self.calls = value, 0

    def __call__(self):
        self.calls += 1
        return self.value


def test_a_value_is_made_once_then_read_back(cache):
    make = Maker({"ms": 1.25})
    assert kept.kept(("test", 1), make, dict) == {"ms": 1.25}
    assert kept.kept(("test", 1), make, dict) == {"ms": 1.25}
    assert make.calls == 1
    assert kept.kept(("test", 2), make, dict) == {"ms": 1.25} and make.calls == 2  # another key
    files = list((cache / "kept" / kept.fingerprint()).iterdir())
    assert len(files) == 2 and not [f for f in files if f.suffix == ".tmp"]


@pytest.mark.parametrize("damage", [b"", b"not zlib", b"x\x9c\x03\x00"])
def test_a_damaged_file_is_made_again_and_replaced(cache, damage):
    make = Maker(3.5)
    kept.kept(("test",), make, float)
    (path,) = (cache / "kept" / kept.fingerprint()).iterdir()
    path.write_bytes(damage)
    assert kept.kept(("test",), make, float) == 3.5 and make.calls == 2
    assert kept.kept(("test",), make, float) == 3.5 and make.calls == 2  # whole again


def test_a_file_of_another_kind_is_made_again(cache):
    kept.kept(("test",), Maker("a str"), str)
    make = Maker(2.0)
    assert kept.kept(("test",), make, float) == 2.0 and make.calls == 1


def test_switched_off_nothing_is_read_or_written(cache, monkeypatch):
    monkeypatch.setenv("FASTLSTM_DISK_CACHE", "0")
    make = Maker(1.0)
    kept.kept(("test",), make, float)
    kept.kept(("test",), make, float)
    assert make.calls == 2 and not (cache / "kept").exists()


def test_nowhere_to_write_still_returns_the_value(tmp_path, monkeypatch):
    blocker = tmp_path / "a file, not a folder"
    blocker.write_text("")
    monkeypatch.setenv("FASTLSTM_CACHE", str(blocker))
    make = Maker(1.0)
    assert kept.kept(("test",), make, float) == 1.0 and kept.kept(("test",), make, float) == 1.0
    assert make.calls == 2


def test_other_code_has_another_fingerprint_and_its_files_go(cache, tmp_path, monkeypatch):
    package = tmp_path / "package"
    package.mkdir()
    (package / "a.py").write_text("x = 1\n")
    monkeypatch.setattr(kept, "PACKAGE", package)
    monkeypatch.setattr(kept, "DATA", tmp_path / "no data")
    kept.fingerprint.cache_clear()
    try:
        first = kept.fingerprint()
        kept.kept(("test",), Maker(1.0), float)
        (package / "a.py").write_text("x = 2\n")  # the code changed
        kept.fingerprint.cache_clear()
        second = kept.fingerprint()
        assert second != first
        make = Maker(2.0)
        assert kept.kept(("test",), make, float) == 2.0 and make.calls == 1  # the old value is not read
        assert [p.name for p in (cache / "kept").iterdir()] == [second]  # and its folder is gone
    finally:
        kept.fingerprint.cache_clear()


def test_a_kept_recording_equals_a_fresh_one(cache):
    cfg = fl.LSTMConfig(batch=3, seq_len=5, input_size=5, hidden=7, layers=2)
    fresh = record._record("streams", cfg, "H100", {})
    record._recorded.cache_clear()
    try:
        first = fl.profile("streams", cfg, chip="H100")  # recorded and kept
        record._recorded.cache_clear()  # as in the next process
        again = fl.profile("streams", cfg, chip="H100")  # read back
    finally:
        record._recorded.cache_clear()
    assert first == fresh and again == fresh and again.launches == fresh.launches
    assert len(list((cache / "kept" / kept.fingerprint()).iterdir())) == 1


def test_a_kept_estimate_is_the_estimate(cache):
    from fastlstm_lib.course.timeline.story import estimated_pass

    ms = lesson.estimate_ms("fused_pointwise", "H100", "python")
    assert ms == estimated_pass("fused_pointwise", "H100", "python", fl.LSTMConfig.article())[1].total_ms
    assert lesson.estimate_ms("fused_pointwise", "H100", "python") == ms  # read back
    assert lesson.estimate_ms("persistent", "M40", "cpp") is None  # cannot run there: kept as None
    assert lesson.estimate_ms("persistent", "M40", "cpp") is None
