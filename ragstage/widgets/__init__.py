"""Two ipywidgets for the chapters: the case editor and the interval explorer.

:class:`CaseEditor` (:mod:`.case_editor`) puts every stage list and judgment of a few traces
into inputs; an edit re-diagnoses that case and recomputes the bucket table with Wilson
intervals. :class:`IntervalExplorer` (:mod:`.interval_explorer`) has two sliders, k and n,
and prints and draws the Wilson and the normal interval for k of n. The text a reader types
is read by :mod:`.parsing`; :mod:`.case_form` turns a case's inputs into a trace.

Both are plain Python objects that hold their widgets: build one, display it with
``editor.widget`` (or just leave ``editor`` as the last expression of a cell; in Colab this
first switches on the custom widget manager), and read their state (``.diagnoses``,
``.table``, ``.wilson``) from Python, which is how the tests drive them without a browser.

CSS classes (stable, for browser tests and for styling). ``<qid>`` is the case's
``query_id`` with every character outside ``[A-Za-z0-9_-]`` replaced by ``_``:

=================================  =========================================================
``ragstage-case-editor``           the whole editor
``ragstage-case-<qid>``            the box of one case
``ragstage-field-<qid>-<field>``   one input (``<field>``: retrieved, reranked, prompt,
                                   gold, answer_ids, claims, correct, refused,
                                   answerable, query_ok, complete)
``ragstage-stage-<qid>``           the diagnosed bucket of the case: its text is exactly the
                                   bucket name, e.g. ``retrieval``
``ragstage-reason-<qid>``          the reason and the numbers (recall, retention, support)
``ragstage-message-<qid>``         the input error of the case, empty when there is none
``ragstage-warning-<qid>``         what makes the current trace inconsistent (an id no
                                   earlier stage passed on, an id not in the corpus),
                                   empty when it is consistent
``ragstage-scores-<qid>``          the retrieval scores of the current ``retrieved`` list
                                   (empty when the list has no scores)
``ragstage-table``                 the bucket table with Wilson intervals
``ragstage-save-path``             the file path box; ``ragstage-save`` the save button;
                                   ``ragstage-save-status`` the result of the last save;
                                   ``ragstage-reset`` the reset button
``ragstage-interval-explorer``     the interval explorer; ``ragstage-interval-text`` its
                                   printed intervals; ``ragstage-k`` / ``ragstage-n`` the
                                   sliders
=================================  =========================================================
"""

from .case_editor import CaseEditor
from .interval_explorer import IntervalExplorer
from .parsing import css_name, parse_claims, parse_ids

__all__ = ["CaseEditor", "IntervalExplorer", "parse_ids", "parse_claims", "css_name"]
