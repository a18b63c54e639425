// The batch settings form: "Add another question" copies the empty question at the end
// with the next number, so several can be added in one save. Without JavaScript the
// form still offers one empty question per save.
(function () {
  const button = document.getElementById('add-question');
  if (!button) return;
  button.hidden = false;
  button.addEventListener('click', () => {
    const rows = document.querySelectorAll('#classification-questions .question-row');
    const last = rows[rows.length - 1];
    const next = Number(last.dataset.index) + 1;
    const copy = last.cloneNode(true);
    copy.dataset.index = String(next);
    copy.querySelectorAll('[name]').forEach((field) => {
      field.name = field.name.replace(/^q\d+\./, `q${next}.`);
      if (field.type === 'checkbox') {
        field.checked = field.name.endsWith('.required');
      } else {
        field.value = '';
      }
    });
    copy.querySelectorAll('.error').forEach((e) => e.remove());
    last.after(copy);
    copy.querySelector('input').focus();
  });
})();
