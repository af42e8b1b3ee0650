"""A session directory that is a symbolic link is followed only when it is safe: the link is ours (or root's)
and its target is writable by its owner alone. Otherwise writes are refused with a clear error and nothing is
written: another user who can plant a link where a project's session folder goes must not receive our files."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from sessiontree import SessionManager, StorageError


def _target(tmp_path: Path, mode: int) -> Path:
    target = tmp_path / "theirs"
    target.mkdir()
    os.chmod(target, mode)
    return target


def test_a_link_to_a_directory_others_can_write_is_refused(tmp_path: Path) -> None:
    target = _target(tmp_path, 0o775)
    link = tmp_path / "sessions"
    link.symlink_to(target)
    with pytest.raises(StorageError, match="symbolic link to a directory that others can write to"):
        sm = SessionManager.create(str(tmp_path), link)
        sm.append_message({"role": "user", "content": "secret", "timestamp": 1})
    assert list(target.iterdir()) == []


@pytest.mark.skipif(os.geteuid() != 0, reason="giving a link to another user needs root (lchown)")
def test_a_link_planted_by_another_user_is_refused(tmp_path: Path) -> None:
    target = _target(tmp_path, 0o700)
    link = tmp_path / "sessions"
    link.symlink_to(target)
    os.lchown(link, 54321, 54321)
    with pytest.raises(StorageError, match="symbolic link that belongs to another user"):
        sm = SessionManager.create(str(tmp_path), link)
        sm.append_message({"role": "user", "content": "secret", "timestamp": 1})
    assert list(target.iterdir()) == []


def test_our_own_link_to_a_private_directory_works(tmp_path: Path) -> None:
    target = _target(tmp_path, 0o700)
    link = tmp_path / "sessions"
    link.symlink_to(target)
    sm = SessionManager.create(str(tmp_path), link)
    sm.append_message({"role": "user", "content": "mine", "timestamp": 1})
    sm.close()
    assert len(list(target.iterdir())) == 1


def test_a_store_url_naming_an_unsafe_link_is_refused(tmp_path: Path) -> None:
    from sessiontree import open_repo

    target = _target(tmp_path, 0o777)
    link = tmp_path / "store"
    link.symlink_to(target)
    with pytest.raises(StorageError, match="refusing to") as caught:
        sm = open_repo(str(link)).create(str(tmp_path))
        sm.append_message({"role": "user", "content": "secret", "timestamp": 1})
    assert str(link) in str(caught.value)
    assert list(target.iterdir()) == []
