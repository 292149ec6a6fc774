// A Jupyter widget needs a running kernel: where a notebook output was a widget, say so.
document.addEventListener("DOMContentLoaded", function () {
  document.querySelectorAll('script[type="application/vnd.jupyter.widget-view+json"]').forEach(function (el) {
    var note = document.createElement("p");
    note.className = "ragstage-widget-note";
    note.textContent = "An interactive widget: open this notebook in Colab or JupyterLab to use it.";
    el.parentNode.insertBefore(note, el);
  });
});
