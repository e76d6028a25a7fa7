"""The fdb-v2 scorer: per live session, turn-taking measured on the recording; per task, the
sessions pooled with bootstrap intervals over sessions.

- `speech`: the model's speech on output.wav (Silero VAD through duplexeval_common's cache, the
  unified settings every benchmark's unified column uses);
- `session`: one session's numbers from examiner.json's turns and the model's speech (pure);
- `pool`: a task's sessions pooled (ratios of sums, cluster bootstrap by session);
- `report_md`: report.md from metrics.json;
- `stage`: the `score` hook (the aggregate stage): which sessions can be scored, and the files.
"""
