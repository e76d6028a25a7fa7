import json

import numpy as np
import pytest

from duplexeval_common import schemas
from duplexeval_runner.events import EventLog


def test_events_carry_input_time_wall_time_and_validate():
    clock = iter([10.0, 10.5, 11.25])
    log = EventLog(wall=lambda: next(clock))
    row = log.emit("speak", np.float64(1.2345678), text="hi", n=np.int64(3), span=(1, 2))
    assert row == {"t": 1.234568, "wall": 10.5, "type": "speak", "text": "hi", "n": 3, "span": [1, 2]}
    json.dumps(row)
    assert schemas.problem("runner-event", row) is None
    assert log.elapsed() == 1.25


def test_unknown_type_and_bad_time_are_rejected():
    log = EventLog()
    with pytest.raises(ValueError, match="runner-event"):
        log.emit("not-a-type", 0.0)
    with pytest.raises(ValueError, match="finite"):
        log.emit("speak", float("nan"))
    assert log.rows == []
