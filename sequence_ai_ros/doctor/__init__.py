"""
`sequence-ai-ros doctor`: the questions behind "it does not work", asked in order.

checkup runs the checks (Doctor, run_doctor); key is check 1 and keeps the key out of every
line; public_checks are 2, 3 and 6 (health, catalogue, latency); act_checks 4, 5 and 7 (one
real test call); probe builds its observation; report prints the lines; codes are the exit
codes.
"""

from sequence_ai_ros.doctor.act_checks import ActAnswer
from sequence_ai_ros.doctor.checkup import (
    DEFAULT_SAMPLES,
    DEFAULT_WAIT_S,
    Doctor,
    DoctorOptions,
    run_doctor,
)
from sequence_ai_ros.doctor.codes import EXIT_CODES
from sequence_ai_ros.doctor.probe import PLAIN_JPEG, probe_observation
from sequence_ai_ros.doctor.report import ca_file_hint

__all__ = ['ActAnswer', 'ca_file_hint', 'DEFAULT_SAMPLES', 'DEFAULT_WAIT_S', 'Doctor',
           'DoctorOptions', 'EXIT_CODES', 'PLAIN_JPEG', 'probe_observation', 'run_doctor']
