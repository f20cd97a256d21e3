"""``make update``: bring the course's updates in, keeping your code in ``minikernel/``.

1. Your work in ``minikernel/`` is committed on your branch ("my work before make
   update"), so nothing of it can be lost or overwritten.
2. The course's new commits are fetched and merged (``git pull``). Where the course
   changed the very lines you wrote, your version is kept (``-X ours``); your
   notebooks in ``my-notebooks/`` are not in git at all, so they never conflict.
3. It says what changed: chapters, your files the course also changed, the rest.

It stops, changing nothing, when a course file outside ``minikernel/`` was edited
(say which, and how to put it back), or when the checkout has no upstream branch.
Standard library only (it runs with the system ``python3``, like the set-up).
"""
from __future__ import annotations

import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
YOURS = "minikernel/"


def say(message: str) -> None:
    print(f"[update] {message}", flush=True)


def git(*args: str, check: bool = True) -> str:
    done = subprocess.run(["git", *args], cwd=ROOT, capture_output=True, text=True, check=False)
    if check and done.returncode != 0:
        raise RuntimeError(f"git {' '.join(args)} failed:\n{done.stdout}{done.stderr}".rstrip())
    return done.stdout.rstrip("\n")  # porcelain lines start with a space: keep it


def identity() -> list[str]:
    """``-c`` options giving git a committer where the learner set none."""
    if git("config", "user.email", check=False):
        return []
    return ["-c", "user.name=minikernel learner", "-c", "user.email=learner@localhost"]


def changed_outside_yours() -> list[str]:
    """Tracked files changed outside ``minikernel/`` (the course's, not the learner's)."""
    lines = git("status", "--porcelain", "--untracked-files=no").splitlines()
    return [line[3:] for line in lines if not line[3:].startswith(YOURS)]


def main() -> int:
    try:
        upstream = git("rev-parse", "--abbrev-ref", "--symbolic-full-name", "@{u}", check=False)
        if not upstream:
            say("this checkout follows no course branch (no upstream); set one with "
                "`git branch --set-upstream-to=origin/main`, then run make update again")
            return 2
        edited = changed_outside_yours()
        if edited:
            say("these course files were edited, and an update could overwrite them: " + ", ".join(edited))
            say("keep a copy if you need one, put them back with `git checkout -- <file>`, then run make update again")
            return 2
        if git("status", "--porcelain", "--", YOURS):
            git(*identity(), "add", "--all", "--", YOURS)
            git(*identity(), "commit", "-q", "-m", f"my work before make update ({time.strftime('%Y-%m-%d %H:%M')})",
                "--", YOURS)
            say(f"saved your work in {YOURS} as a commit on your branch")
        before = git("rev-parse", "HEAD")
        say(f"fetching the course's updates ({upstream}) ...")
        git("fetch", "--quiet", upstream.split("/", 1)[0])
        git(*identity(), "merge", "--no-edit", "-q", "-X", "ours", upstream)
        course_files = git("diff", "--name-only", before, "HEAD").splitlines()
    except RuntimeError as err:
        say(str(err))
        if (ROOT / ".git" / "MERGE_HEAD").exists():
            git("merge", "--abort", check=False)
            say("the merge was undone; your files are as they were before make update")
        say("nothing of your work is lost: it is in git (`git log` shows it)")
        return 1
    if not course_files:
        say("already up to date")
        return 0
    chapters = [f for f in course_files if f.startswith("chapters/") and f.endswith(".ipynb")]
    yours = [f for f in course_files if f.startswith(YOURS)]
    rest = [f for f in course_files if f not in chapters and f not in yours]
    say(f"brought in {len(course_files)} changed file(s) of the course:")
    if chapters:
        say("  chapters: " + ", ".join(Path(f).name for f in chapters)
            + " (make lab refreshes your copies you have not saved; a saved copy is kept)")
    if yours:
        say("  in minikernel/ (merged with your code; where both changed a line, yours was kept): " + ", ".join(yours))
    if rest:
        say("  other: " + ", ".join(rest[:12]) + (f" and {len(rest) - 12} more" if len(rest) > 12 else ""))
    say("next: make lab (it updates .venv first if the lock file changed)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
