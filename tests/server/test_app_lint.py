"""App.lint and App.diff without a transport: the limits before any work, the slots, and the
call's deadline and cancellation polled inside the lint (not only between calls)."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from lint_reference import not_utf8_count

from tokend.core import get_encoding
from tokend.core.errors import Cancelled, DeadlineExceeded, InvalidInput, LimitExceeded
from tokend.core.lint import lint_tokenizer
from tokend.core.registry import Registry
from tokend.server.app.linting import DEFAULT_FINDINGS, DiffRequest, LintRequest
from tokend.server.app.service import App
from tokend.server.config import ServerConfig
from tokend.server.jobs import JobStore
from tokend.server.tokenizers import Tokenizers


@pytest.fixture
def app(tmp_path: Path) -> Iterator[App]:
    config = ServerConfig(port=0, registry=tmp_path / "registry", metrics_port=0,
                          max_lint_vocab=120_000, max_lint_findings=300)
    yield App(config, Tokenizers(Registry(config.registry)), JobStore(config.jobs_path))


class GivesUp:
    """A CallContext whose caller leaves after ``polls`` checks (or whose deadline passes)."""

    def __init__(self, polls: int, *, deadline: bool = False) -> None:
        self.polls, self.deadline, self.seen = polls, deadline, 0

    def time_remaining(self) -> float | None:
        self.seen += 1
        return 0.0 if self.deadline and self.seen > self.polls else None

    def cancelled(self) -> bool:
        return not self.deadline and self.seen > self.polls

    def add_done_callback(self, callback: Callable[[], None]) -> bool:
        return False


class TestAppLint:
    def test_result_is_core_lint_named_by_the_served_ref(self, app: App) -> None:
        result = app.lint(LintRequest("gpt-2", depth="import"))
        expected = lint_tokenizer(get_encoding("gpt2"), name="gpt2", full=False)
        assert result.tokenizer == "gpt2" and result.depth == "import"
        assert result.report.summary() == expected.summary()
        result = app.lint(LintRequest("cl100k_base"))
        expected = lint_tokenizer(get_encoding("cl100k_base"), name="cl100k_base")
        ordered = sorted(expected.findings, key=lambda f: ["error", "warning", "info"].index(
            f.severity))
        assert [f.to_dict() for f in result.report.findings] == [f.to_dict() for f in ordered]
        assert {f.kind for f in ordered} >= {"hole", "glitch-candidate"}

    def test_findings_listed_up_to_the_limit_counted_all(self, app: App) -> None:
        """0 asks for the default (1000), itself cut to --max-lint-findings (300 here)."""
        result = app.lint(LintRequest("gpt2", depth="import", list_partial=True))
        assert result.truncated and len(result.report.findings) == 300 < DEFAULT_FINDINGS
        assert result.report.summary()["partial-utf8"] == not_utf8_count("r50k_base")
        result = app.lint(LintRequest("gpt2", depth="import", list_partial=True,
                                      max_findings=10))
        assert [f.kind for f in result.report.findings] == ["partial-utf8"] * 10

    def test_cancelled_inside_the_unreachable_loop(self, app: App) -> None:
        """Two polls before the token loop, then one per 2048 tokens: leaving after 4 stops
        the lint inside the loop; the slot is free again afterwards."""
        caller = GivesUp(4)
        with pytest.raises(Cancelled):
            app.lint(LintRequest("gpt2"), caller)
        assert caller.seen == 5
        with pytest.raises(DeadlineExceeded):
            app.diff(DiffRequest("gpt2", "r50k_base"), GivesUp(1, deadline=True))
        assert app.lint(LintRequest("gpt2", depth="import")).report.counts["unreachable"] == 0

    def test_one_call_at_a_time_per_worker(self, app: App) -> None:
        with app.lint_slots.hold("Lint"), pytest.raises(LimitExceeded,
                                                        match="--max-lint-calls"):
            app.diff(DiffRequest("gpt2", "r50k_base"))

    def test_limits_before_any_work(self, app: App) -> None:
        with pytest.raises(LimitExceeded, match="--max-lint-vocab") as err:
            app.lint(LintRequest("o200k_base"))
        assert err.value.field == "tokenizer"  # type: ignore[attr-defined]
        with pytest.raises(LimitExceeded, match="--max-lint-findings"):
            app.lint(LintRequest("gpt2", max_findings=301))
        with pytest.raises(InvalidInput, match="is not a lint depth"):
            app.lint(LintRequest("gpt2", depth="deep"))
        with pytest.raises(InvalidInput, match="at most 100"):
            app.diff(DiffRequest("gpt2", "gpt2", top=101))
