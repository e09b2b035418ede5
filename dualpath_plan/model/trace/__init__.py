"""Agent traces: schema v2 (``schema``), the rules that turn a public trace's requests into v2 sessions
(``convert``), one converter per public format (``formats``), reading any of them as a stream (``read``) and
their statistics (``stats``)."""
