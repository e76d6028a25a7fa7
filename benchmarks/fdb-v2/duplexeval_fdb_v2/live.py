"""live.json: what the runner core's live stage reads to run one session (the contract with
the runner core, `duplexeval-live/1`).

    {"format": "duplexeval-live/1", "duration_s": 45.0, "sample_rate": 16000, ("seed": k,)
     "examiner": {"system_prompt", "opening", "goals": [{"id", "goal", "say"}, ...],
                  "end_phrase", "turn_limit"}}

`opening` and a goal's `say` are absent when the task scripts none (an imported upstream task,
tasks.IMPORTED_FORMAT): the examiner's LLM then says that line (the cascade examiner's
check_script accepts both).
"""

from __future__ import annotations

from .tasks import LiveTask

FORMAT = "duplexeval-live/1"
DEFAULT_DURATION_S = 45.0


def live_json(task: LiveTask, duration_s: float, sample_rate: int, seed: int = 0) -> dict:
    """The session of one task: its length, the recorded channels' rate and the examiner's script;
    `seed` (an epoch's: the runner core adds it to the stage's seed, for the examiner and the model)
    is written only when not 0, so one epoch's live.json is what it was before epochs."""
    examiner = {"system_prompt": task.system_prompt}
    if task.opening is not None:
        examiner["opening"] = task.opening
    examiner["goals"] = [{"id": g.id, "goal": g.goal, **({"say": g.say} if g.say is not None else {})}
                         for g in task.goals]
    examiner.update(end_phrase=task.end_phrase, turn_limit=task.turn_limit)
    return {"format": FORMAT, "duration_s": float(duration_s), "sample_rate": int(sample_rate),
            **({"seed": int(seed)} if seed else {}), "examiner": examiner}


def check_live(obj, where: str) -> list[str]:
    """The problems of a live.json object (empty when it is well formed): what the runner core
    relies on, checked by the dataset stage before it writes the file and by the tests."""
    problems = []
    if not isinstance(obj, dict) or obj.get("format") != FORMAT:
        return [f"{where}: format must be {FORMAT}"]
    d, sr = obj.get("duration_s"), obj.get("sample_rate")
    if isinstance(d, bool) or not isinstance(d, (int, float)) or not d > 0:
        problems.append(f"{where}: duration_s must be a positive number")
    if isinstance(sr, bool) or not isinstance(sr, int) or sr < 8000:
        problems.append(f"{where}: sample_rate must be a whole number >= 8000")
    ex = obj.get("examiner")
    if not isinstance(ex, dict):
        return problems + [f"{where}: examiner must be an object"]
    for k in ("system_prompt", "opening", "end_phrase"):
        if (k != "opening" or k in ex) and (not isinstance(ex.get(k), str) or not ex[k]):
            problems.append(f"{where}: examiner.{k} must be a non-empty string"
                            + (" (or absent: the LLM's first line)" if k == "opening" else ""))
    goals = ex.get("goals")
    if not isinstance(goals, list) or not goals:
        problems.append(f"{where}: examiner.goals must be a non-empty list")
    else:
        for i, g in enumerate(goals):
            if not isinstance(g, dict) or sorted(g) not in (["goal", "id"], ["goal", "id", "say"]) \
                    or not all(isinstance(g[k], str) and g[k] for k in g):
                problems.append(f"{where}: examiner.goals[{i}] must have id and goal, and say or not (non-empty "
                                "strings)")
    tl = ex.get("turn_limit")
    if isinstance(tl, bool) or not isinstance(tl, int) or tl < 1:
        problems.append(f"{where}: examiner.turn_limit must be a whole number >= 1")
    elif isinstance(goals, list) and len(goals) > tl - 1:
        problems.append(f"{where}: examiner.turn_limit {tl} leaves no turn for the end phrase after "
                        f"{len(goals)} goals")
    seed = obj.get("seed", 0)
    if isinstance(seed, bool) or not isinstance(seed, int) or seed < 0:
        problems.append(f"{where}: seed must be a whole number >= 0")
    extra = sorted(set(obj) - {"format", "duration_s", "sample_rate", "seed", "examiner"})
    if extra:
        problems.append(f"{where}: unknown field {', '.join(extra)}")
    return problems
