"""model/filemode.py: an output file gets 0666 less the umask, and the umask is left as it was."""

from __future__ import annotations

import os

from dualpath_plan.model.filemode import give_usual_mode


def test_a_file_gets_0666_less_the_umask_and_the_umask_stays(tmp_path):
    path = tmp_path / "f"
    path.write_text("x")
    os.chmod(path, 0o600)
    old = os.umask(0o027)
    try:
        give_usual_mode(path)
        assert os.umask(0o027) == 0o027  # unchanged by the call
    finally:
        os.umask(old)
    assert path.stat().st_mode & 0o777 == 0o640
