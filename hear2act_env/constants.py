"""Constants shared across the package (no imports: any layer may use them)."""

#: Sample rate of every waveform the env produces and every audio consumer expects (Hz).
SAMPLE_RATE = 16_000

#: Longest texts an observation may carry (the ``Text`` spaces' limits): the transcript keeps
#: the request and the most recent turns within it; the options text must fit.
TRANSCRIPT_MAX = 32_768
OPTIONS_MAX = 8_192
DOMAIN_MAX = 128
#: Longest scenario texts the validator accepts: sentences (request, statements, answers,
#: hints, phrases) and short texts (names, labels, levels, keywords).
SENTENCE_MAX = 400
SHORT_TEXT_MAX = 80

#: The prompt template LLM agents use when none is named (``hear2act_agents.llm.templates``);
#: a configuration that names it and one that names none are the same configuration.
DEFAULT_PROMPT = "hear2act-v1"
