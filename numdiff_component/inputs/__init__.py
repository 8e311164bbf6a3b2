"""The input: what a source names and where its bytes are (`sources`), the prediction table read
batch by batch (`tables`, with `json_tables` and `csv_stream`)."""
