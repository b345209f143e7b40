"""`imap-mcp check` run as a command, and its output read back: step lines, tool lines, the verdict line."""

from __future__ import annotations

from dataclasses import dataclass

from harness import ANY_USER_PASSWORD, run_cli

COLUMN = 38

#: the width of a step's name (`Step.column`'s default)
STEP_COLUMN = 18
#: how the names of the steps (not the tools' lines) start; `send policy` lines follow SMTP's steps
STEP_PREFIXES = ("IMAP ", "SMTP ", "send policy")
#: a secret no line may ever show (tests set it as a password)
SECRET = "hunter2-secret-pw"
#: the tool uses that need SMTP_HOST: not offered without it
SENDING = [
    "send_message (save_to_sent: true)",
    "send_message (save_to_sent: false)",
    "reply_to_message (save_to_sent: true)",
    "reply_to_message (save_to_sent: false)",
    "send_draft (save_to_sent: true)",
    "send_draft (save_to_sent: false)",
    "forward_message (save_to_sent: true)",
    "forward_message (save_to_sent: false)",
]


@dataclass(frozen=True)
class Line:
    outcome: str
    name: str
    detail: str


@dataclass(frozen=True)
class Output:
    code: int
    steps: list[Line]
    tools: list[Line]
    last: str
    text: str

    def step(self, name: str) -> Line:
        return next(line for line in self.steps if line.name == name)

    @property
    def step_names(self) -> list[str]:
        return [line.name for line in self.steps]

    @property
    def failed(self) -> Line:
        """The one failed step."""
        failed = [line for line in self.steps if line.outcome == "fail"]
        assert len(failed) == 1, self.text
        return failed[0]

    @property
    def verdicts(self) -> dict[str, str]:
        """Each tool use's verdict, by its name (`delete_messages (permanent: true)`)."""
        return {line.name: line.outcome for line in self.tools}


def parsed(line: str) -> Line:
    """A line as `Step.line` writes it: the outcome, then the name and the detail in their columns."""
    outcome, rest = line[:8].strip(), line[10:]
    width = STEP_COLUMN if rest.startswith((*STEP_PREFIXES, "tools ")) or rest == "tools" else COLUMN
    return Line(outcome, rest[:width].strip(), rest[width + 1 :])


def run_check(env: dict[str, str], *args: str) -> Output:
    """`imap-mcp check ARGS` to its end: its lines read back, and never a traceback or a password."""
    done = run_cli(env, "check", *args)
    assert "Traceback" not in done.stderr, done.stderr
    for secret in (ANY_USER_PASSWORD, SECRET):
        assert secret not in done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines and lines[-1].startswith("imap-mcp check: "), done.stdout + done.stderr
    read = [parsed(line) for line in lines[:-1]]
    steps = [line for line in read if line.name.startswith(STEP_PREFIXES)]
    tools = [line for line in read if not line.name.startswith(STEP_PREFIXES)]
    return Output(done.returncode, steps, tools, lines[-1], done.stdout)
