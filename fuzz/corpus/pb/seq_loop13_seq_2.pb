
	seq_empty