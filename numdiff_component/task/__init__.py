"""What a job is asked and where its results go, shared by the job and every part it runs (the
inputs, the engines, the report, tracking), none of which it imports: the configuration
(`config`), the results folder and its files (`results`), the quality gate (`gate`), and Arrow
tables as pandas frames with every integer kept (`arrow_frames`)."""
