"""Progress in logs: plain lines at the interval with done/total, rate and ETA (fake clock)."""

import io

from adapath.progress import Progress, format_seconds, track


class FakeClock:
    def __init__(self):
        self.now = 100.0

    def __call__(self):
        return self.now


def test_plain_lines_at_the_interval_with_rate_and_eta():
    clock, stream = FakeClock(), io.StringIO()  # StringIO is not a terminal: plain lines
    with Progress(200, "epoch 1", unit="questions", stream=stream, interval=5.0, clock=clock) as bar:
        for _ in range(4):  # 2 s per 20 questions: no line before 5 s
            clock.now += 2.0
            bar.advance(20)
            if clock.now - 100.0 < 5.0:
                assert stream.getvalue() == ""
        # at 8 s: 80 done, the first line came at 6 s (60 done, 10 questions/s, 140 left -> 14 s)
        lines = stream.getvalue().splitlines()
        assert lines == ["epoch 1: 60/200 questions (30%), 10.0 questions/s, ETA 14s"]
        clock.now += 3.0  # 11 s: 5 s after the last line -> a new one
        bar.advance(30)  # 110 done, 10 questions/s, 90 left
        assert stream.getvalue().splitlines()[-1] == "epoch 1: 110/200 questions (55%), 10.0 questions/s, ETA 9s"
        clock.now += 1.0  # 12 s: within the interval -> nothing
        bar.advance(10)
        assert len(stream.getvalue().splitlines()) == 2
        clock.now += 8.0  # 20 s, all done
        bar.advance(80)
    lines = stream.getvalue().splitlines()
    assert lines[2] == "epoch 1: 200/200 questions (100%), 10.0 questions/s, ETA 0s"
    assert lines[3] == "epoch 1: 200 questions in 20s, 10.0 questions/s"  # closing line after periodic ones
    assert len(lines) == 4


def test_short_runs_stay_silent_and_track_counts_items():
    clock, stream = FakeClock(), io.StringIO()
    seen = []
    for item in track(range(7), "node text", unit="nodes", stream=stream, interval=5.0, clock=clock):
        seen.append(item)
        clock.now += 0.5
    assert seen == list(range(7)) and stream.getvalue() == ""
    clock2, stream2 = FakeClock(), io.StringIO()
    for _ in track(iter(range(3)), "walk", stream=stream2, interval=1.0, clock=clock2):
        clock2.now += 2.0
    # unknown total (an iterator): no percentage, no ETA; the rate starts after the first item
    assert stream2.getvalue().splitlines()[:2] == ["walk: 1 items, first step took 2s (warm-up, left out of the rate)",
                                                   "walk: 2 items, 0.5 items/s"]


def test_terminal_gets_a_bar_not_lines():
    class Terminal(io.StringIO):
        def isatty(self):
            return True

    stream = Terminal()
    with Progress(10, "answer", stream=stream, interval=0.0) as bar:
        assert bar.use_bar
        bar.advance(10)
    assert "answer: " not in stream.getvalue()  # no plain lines on a terminal


def test_format_seconds():
    assert [format_seconds(s) for s in (0, 9.6, 65, 3599, 7380)] == ["0s", "10s", "1m05s", "59m59s", "2h03m"]


def test_quiet_counts_without_output():
    clock, stream = FakeClock(), io.StringIO()
    with Progress(5, "x", stream=stream, interval=1.0, quiet=True, clock=clock) as bar:
        for _ in range(5):
            clock.now += 10.0
            bar.advance()
    assert bar.done == 5 and stream.getvalue() == ""


def test_update_sets_the_count():
    clock, stream = FakeClock(), io.StringIO()
    with Progress(40, "answer", unit="q", stream=stream, interval=5.0, clock=clock) as bar:
        clock.now += 5.0
        bar.update(10)
        clock.now += 5.0
        bar.update(30)
    # the first step (10 q in 5 s) is warm-up; then 20 q in 5 s: 4 q/s, 10 left -> 2.5 s; the
    # closing line counts the whole run
    assert stream.getvalue().splitlines() == ["answer: 10/40 q (25%), first step took 5s (warm-up, left out of the rate)",
                                              "answer: 30/40 q (75%), 4.0 q/s, ETA 2s",
                                              "answer: 30 q in 10s, 3.0 q/s"]


def test_resumed_work_counts_in_done_not_in_the_rate():
    clock, stream = FakeClock(), io.StringIO()
    with Progress(None, "answer", unit="questions", stream=stream, interval=5.0, clock=clock) as bar:
        bar.set_total(100, done=40)  # 40 finished by an earlier run
        clock.now += 6.0
        bar.update(52)  # the first step: 12 new in 6 s
        clock.now += 6.0
        bar.update(64)  # then 12 in 6 s: 2/s, 36 left -> 18 s
    lines = stream.getvalue().splitlines()
    assert lines[1] == "answer: 64/100 questions (64%), 2.0 questions/s, ETA 18s"
    assert lines[2] == "answer: 24 questions in 12s, 2.0 questions/s"


def test_a_note_writes_a_line_while_no_unit_finishes():
    # a batch of slow LLM calls: nothing finishes for 12 s, yet the log hears of each step
    clock, stream = FakeClock(), io.StringIO()
    bar = Progress(32, "answer", unit="questions", stream=stream, interval=5.0, clock=clock)
    for step in range(1, 5):
        clock.now += 3.0
        bar.note(f"LLM step {step}: 16 prompts")
    lines = stream.getvalue().splitlines()
    # lines at 6 s (step 2) and 12 s (step 4); the 3 s and 9 s steps fall inside the interval
    assert lines == ["answer: 0/32 questions (0%), first step running; LLM step 2: 16 prompts",
                     "answer: 0/32 questions (0%), first step running; LLM step 4: 16 prompts"]


def test_a_slow_first_step_stays_out_of_the_estimate():
    # the bank build: 32 of 1000 queries in a first batch of 40 s (JIT compilation), then
    # 32 every 1.6 s; the old estimate after the first batch was 19m56s for a 56 s build
    clock, stream = FakeClock(), io.StringIO()
    with Progress(1000, "bank", unit="queries", stream=stream, interval=5.0, clock=clock) as bar:
        clock.now += 40.0
        bar.update(32)
        for _ in range(4):  # 128 more in 6.4 s: 20 queries/s
            clock.now += 1.6
            bar.advance(32)
    lines = stream.getvalue().splitlines()
    assert lines[0] == "bank: 32/1000 queries (3%), first step took 40s (warm-up, left out of the rate)"
    # at 46.4 s: 160 done, 840 left at 20/s -> 42 s (the build's real rest)
    assert lines[1] == "bank: 160/1000 queries (16%), 20.0 queries/s, ETA 42s"


def test_a_loop_stopped_early_does_not_close_like_a_finished_one():
    """Ctrl-C (or an error) ends the loop: the closing line says so instead of giving the
    rate of a run that finished."""
    from adapath.errors import Interrupted

    for stop, word in ((KeyboardInterrupt, "interrupted"), (Interrupted, "interrupted"),
                       (ValueError, "stopped by an error")):
        clock, stream = FakeClock(), io.StringIO()
        try:
            with Progress(100, "bank", unit="queries", stream=stream, interval=5.0, clock=clock) as bar:
                clock.now += 6.0
                bar.update(40)
                clock.now += 4.0
                raise stop
        except (KeyboardInterrupt, Exception):
            pass
        lines = stream.getvalue().splitlines()
        assert lines[-1] == f"bank: {word} after 40 queries in 10s"
