"""pip's leftovers of a cut step (envcheck.fix.runner.pipstep): what is pip's stash of this fix,
what was there before it, and that nothing outside the target is ever named or removed, whatever
the record's note says."""

from __future__ import annotations

import json
from pathlib import Path

from envcheck.fix.runner import pipstep


def _target(tmp_path: Path) -> tuple[Path, Path, Path]:
    prefix = tmp_path / "venv"
    site = prefix / "lib" / "python3.11" / "site-packages"
    (site / "paddle" / "base").mkdir(parents=True)
    (site / "~ld-stash").mkdir()  # an earlier pip's, not this fix's
    record = prefix / ".envcheck-fix" / "records" / "one"
    record.mkdir(parents=True)
    return prefix, site, record


def test_a_stash_made_after_the_note_is_pips_of_this_fix_and_goes(tmp_path: Path) -> None:
    prefix, site, record = _target(tmp_path)
    roots = pipstep.roots_of([str(site / "paddle" / "base" / "core.so")], [str(site)])
    assert roots == {str(site), str(site / "paddle"), str(site / "paddle" / "base")}
    pipstep.note_stash(str(record), roots)
    (site / "paddle").rename(site / "~addle")  # pip stashes the folder beside itself
    (record / pipstep.TEMPORARY / "pip-uninstall-x").mkdir(parents=True)
    assert pipstep.leftovers(str(record), str(prefix)) == [
        str(record / pipstep.TEMPORARY / "pip-uninstall-x"),
        str(site / "~addle"),
    ]
    said: list[str] = []
    assert pipstep.clean(str(record), str(prefix), said.append) == []
    assert sorted(p.name for p in site.iterdir()) == ["~ld-stash"]  # the earlier one stays
    assert "~addle" in said[0]
    assert pipstep.leftovers(str(record), str(prefix)) == []


def test_a_note_naming_folders_outside_the_target_names_nothing_there(tmp_path: Path) -> None:
    prefix, _, record = _target(tmp_path)
    outside = tmp_path / "elsewhere"
    (outside / "~precious").mkdir(parents=True)
    note = {"roots": [str(outside), "relative"], "before": []}
    (record / pipstep.STASH).write_text(json.dumps(note))
    assert pipstep.leftovers(str(record), str(prefix)) == []
    pipstep.clean(str(record), str(prefix), lambda _: None)
    assert (outside / "~precious").is_dir()


def test_a_note_that_is_a_link_or_not_json_is_no_note(tmp_path: Path) -> None:
    prefix, site, record = _target(tmp_path)
    elsewhere = tmp_path / "note.json"
    elsewhere.write_text(json.dumps({"roots": [str(site)], "before": []}))
    (record / pipstep.STASH).symlink_to(elsewhere)
    assert pipstep.leftovers(str(record), str(prefix)) == []
    (record / pipstep.STASH).unlink()
    (record / pipstep.STASH).write_text("{not json")
    assert pipstep.leftovers(str(record), str(prefix)) == []
