"""
Recorded episodes as a training set: `sequence-ai-ros export --format lerobot`.

episode_frames  one recording read once (streamed) into frames on its control-rate grid: the
                command sent, the joints and the camera frames at that moment, by their stamps
lerobot         LeRobot's on-disk format v3.0 (parquet, mp4, meta/) written an episode at a time
lerobot_files   its data parquet and mp4 files, appended to until a size, then the next
stats           meta/stats.json's figures as running sums
read_back       an exported episode read back for the report
export          the command's work: which recordings, in what order, into one dataset

Reading needs the record extra (mcap); writing pyarrow, PyAV, numpy and Pillow (the dataset
extra). Nothing here imports the client, the node or the demo.
"""
