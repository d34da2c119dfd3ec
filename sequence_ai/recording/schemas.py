"""The message definitions a recording carries, as ROS 2 `.msg` text (MCAP schema encoding `ros2msg`).

Standard ROS 2 types where one fits (camera frames, joint states, the instruction), so Foxglove
and rosbag2 read those without our package; our own types (the run, requests, chunks, commands,
holds, progress, the outcome) under the package name `sequence_ai_record`, with their definition
in the file: any ros2msg reader decodes them from the file alone.

A schema's text is the type's own definition followed by each type it uses, separated the way
rosbag2 writes them (a line of 80 `=` then `MSG: pkg/Type`).
"""

from __future__ import annotations

from typing import Dict, List, Tuple

__all__ = ["definition", "ros_name", "schema_text"]

_SEPARATOR = "=" * 80

# name -> (own definition, names of the types it uses, in order)
_DEFINITIONS: Dict[str, Tuple[str, List[str]]] = {
    "builtin_interfaces/Time": ("int32 sec\nuint32 nanosec\n", []),
    "std_msgs/Header": ("builtin_interfaces/Time stamp\nstring frame_id\n", ["builtin_interfaces/Time"]),
    "std_msgs/String": ("string data\n", []),
    "std_msgs/MultiArrayDimension": ("string label\nuint32 size\nuint32 stride\n", []),
    "std_msgs/MultiArrayLayout": ("MultiArrayDimension[] dim\nuint32 data_offset\n", ["std_msgs/MultiArrayDimension"]),
    "std_msgs/Float64MultiArray": ("MultiArrayLayout layout\nfloat64[] data\n",
                                   ["std_msgs/MultiArrayLayout", "std_msgs/MultiArrayDimension"]),
    "sensor_msgs/CompressedImage": ("std_msgs/Header header\nstring format\nuint8[] data\n",
                                    ["std_msgs/Header", "builtin_interfaces/Time"]),
    "sensor_msgs/JointState": ("std_msgs/Header header\nstring[] name\nfloat64[] position\nfloat64[] velocity\n"
                               "float64[] effort\n", ["std_msgs/Header", "builtin_interfaces/Time"]),
    # -- our own ---------------------------------------------------------------------------------
    "sequence_ai_record/RunStart": (
        "# The run this file holds: written once, first.\n"
        "std_msgs/Header header\nstring model\nstring episode_id\n"
        "# control frequency in force at the start, Hz (NaN: not known yet)\n"
        "float64 control_hz\nstring client_version\nstring[] joint_names\nstring[] camera_views\n"
        "# anything else the caller passed, as JSON\nstring extra_json\n",
        ["std_msgs/Header", "builtin_interfaces/Time"]),
    "sequence_ai_record/Request": (
        "# One /act request, stamped when it was sent.\n"
        "std_msgs/Header header\nstring rid\nstring instruction\nstring episode_id\n"
        "# actions the run had played when its observation was taken\nuint32 actions_at_submit\n"
        "string[] views\n",
        ["std_msgs/Header", "builtin_interfaces/Time"]),
    "sequence_ai_record/ActionChunk": (
        "# The answer to a request, stamped when it arrived; steps is rows x action_dim.\n"
        "std_msgs/Header header\nstring rid\nbuiltin_interfaces/Time sent\nfloat64 latency_s\n"
        "string action_space\nfloat64 control_frequency_hz\nstd_msgs/Float64MultiArray steps\n"
        "# the first row the loop plays (after alignment) and how many it installed\n"
        "uint32 first_row\nuint32 rows_installed\nstring[] warnings\n"
        "# set when the request failed; then steps is empty\nstring error\n",
        ["std_msgs/Header", "builtin_interfaces/Time", "std_msgs/Float64MultiArray", "std_msgs/MultiArrayLayout",
         "std_msgs/MultiArrayDimension"]),
    "sequence_ai_record/Command": (
        "# One action handed to the robot, with the chunk row it came from.\n"
        "std_msgs/Header header\nstring rid\nuint32 row_index\nuint32 action_index\nfloat64[] values\n"
        "# seconds from its chunk's observation to act(), and past the moment the row was computed for\n"
        "# (observation + row / control Hz); NaN: not known\n"
        "float64 age_s\nfloat64 lateness_s\n",
        ["std_msgs/Header", "builtin_interfaces/Time"]),
    "sequence_ai_record/Hold": (
        "# The arm was told to hold: underrun (a late chunk) or the run's ending.\n"
        "std_msgs/Header header\nstring reason\nuint32 actions\n",
        ["std_msgs/Header", "builtin_interfaces/Time"]),
    "sequence_ai_record/Progress": (
        "# A progress snapshot (the node's action feedback). NaN: not known.\n"
        "std_msgs/Header header\nbool running\nuint32 actions\nuint32 chunks\nuint32 buffered\nfloat64 elapsed_s\n"
        "uint32 underruns\nfloat64 underrun_s\nstring instruction\nbool warming\nfloat64 warming_waited_s\n"
        "float64 warming_eta_s\nfloat64 refill_latency_s\n"
        "# the actions played so far: age (observation to act()) and lateness, median and largest, s\n"
        "float64 age_p50_s\nfloat64 age_max_s\nfloat64 lateness_p50_s\nfloat64 lateness_max_s\n",
        ["std_msgs/Header", "builtin_interfaces/Time"]),
    "sequence_ai_record/RunOutcome": (
        "# How the run ended (sequence_ai.RunOutcome), plus what the recording kept. NaN: not measured.\n"
        "std_msgs/Header header\nstring reason\nbool stopped_early\nstring message\nuint32 actions\nuint32 chunks\n"
        "float64 elapsed_s\nuint32 underruns\nfloat64 underrun_s\nuint32 episode_resets\nfloat64 max_seam_jump\n"
        "string action_space\nuint32 instruction_swaps\nfloat64 max_instruction_lag_s\nfloat64 observe_s\n"
        "# whether a hold ended the run, and the instruction in force at the end\nbool held\nstring final_instruction\n"
        "# camera frames written to the file, and dropped because the disk could not keep up\n"
        "uint32 frames_recorded\nuint32 frames_dropped\n"
        "# the actions' age (observation to act()) and lateness (past the moment each row was computed\n"
        "# for): median and largest, seconds\n"
        "float64 age_p50_s\nfloat64 age_max_s\nfloat64 lateness_p50_s\nfloat64 lateness_max_s\n",
        ["std_msgs/Header", "builtin_interfaces/Time"]),
}


def definition(name: str) -> str:
    """The type's own `.msg` text, without the types it uses."""
    return _DEFINITIONS[name][0]


def schema_text(name: str) -> str:
    """The ros2msg text for `name` ("pkg/Type"): its definition, then every type it uses."""
    own, uses = _DEFINITIONS[name]
    parts = [own]
    for used in uses:
        parts.append(f"{_SEPARATOR}\nMSG: {used}\n{_DEFINITIONS[used][0]}")
    return "".join(parts)


def ros_name(name: str) -> str:
    """ "sensor_msgs/CompressedImage" -> "sensor_msgs/msg/CompressedImage" (the MCAP schema name)."""
    package, type_name = name.split("/")
    return f"{package}/msg/{type_name}"

