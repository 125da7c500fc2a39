// Reads a kubeconfig file chosen on the join page into the kubeconfig text area: the file
// never leaves the browser except in the form's own POST.
document.addEventListener("change", function (event) {
  var input = event.target;
  if (!input || input.id !== "kubeconfig-file" || !input.files || !input.files[0]) {
    return;
  }
  var reader = new FileReader();
  reader.onload = function () {
    var area = document.getElementById("kubeconfig");
    if (area) {
      area.value = String(reader.result);
    }
  };
  reader.readAsText(input.files[0]);
});
