"""The grammars and what runs them: the ``.lark`` grammars of event strings and section names,
their committed LALR(1) tables (``*_tables.json``), the one LALR runtime both parsers use
(``lalr``), the reading of the tables (``tables``) and the events tables' generator
(``tablegen``). Neither the front end's parser nor the loader owns it: both import it."""
