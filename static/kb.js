// verl Error Manual: progressive enhancement only. Every feature here also works without JavaScript.
(function () {
  "use strict";

  // "/" focuses the search box (unless the user is typing somewhere already).
  document.addEventListener("keydown", function (event) {
    if (event.key !== "/" || event.ctrlKey || event.metaKey || event.altKey) return;
    var tag = (document.activeElement && document.activeElement.tagName) || "";
    if (tag === "INPUT" || tag === "TEXTAREA" || (document.activeElement && document.activeElement.isContentEditable)) return;
    var box = document.querySelector("[data-live-search]");
    if (box) { event.preventDefault(); box.focus(); box.select(); }
  });

  // Search as you type: fetch the same partial the search page renders, debounced.
  function liveSearch(input) {
    var panel = document.getElementById(input.getAttribute("aria-controls"));
    var timer = null, seq = 0, selected = -1;
    function options() { return panel.querySelectorAll(".hit"); }
    function select(index) {
      var items = options();
      if (!items.length) return;
      selected = (index + items.length) % items.length;
      items.forEach(function (item, i) { item.setAttribute("aria-selected", i === selected ? "true" : "false"); });
      items[selected].scrollIntoView({ block: "nearest" });
    }
    function close() { panel.hidden = true; input.setAttribute("aria-expanded", "false"); selected = -1; }
    function run() {
      var q = input.value.trim();
      if (q.length < 2) { close(); return; }
      var mine = ++seq;
      var url = "/search?fragment=1&q=" + encodeURIComponent(q);
      fetch(url, { headers: { "Accept": "text/html" }, credentials: "same-origin" })
        .then(function (r) { return r.ok ? r.text() : ""; })
        .then(function (html) {
          if (mine !== seq) return; // a newer keystroke already asked again
          panel.innerHTML = html;
          panel.hidden = !html.trim();
          input.setAttribute("aria-expanded", panel.hidden ? "false" : "true");
          selected = -1;
        })
        .catch(function () { /* the form still submits normally */ });
    }
    input.addEventListener("input", function () { clearTimeout(timer); timer = setTimeout(run, 150); });
    input.addEventListener("keydown", function (event) {
      if (panel.hidden) return;
      if (event.key === "ArrowDown") { event.preventDefault(); select(selected + 1); }
      else if (event.key === "ArrowUp") { event.preventDefault(); select(selected - 1); }
      else if (event.key === "Escape") { close(); }
      else if (event.key === "Enter" && selected >= 0) {
        event.preventDefault();
        var link = options()[selected].querySelector("a");
        if (link) window.location.href = link.href;
      }
    });
    document.addEventListener("click", function (event) {
      if (!panel.contains(event.target) && event.target !== input) close();
    });
  }
  document.querySelectorAll("[data-live-search]").forEach(liveSearch);

  function votePayload(form, button) {
    var payload = { worked: button.value === "yes" };
    var note = form.querySelector("textarea[name=comment]");
    if (note && note.value.trim()) payload.comment = note.value.trim().slice(0, 500);
    return payload;
  }

  // Votes in place: the JSON API with the same cookie; the form POST remains the fallback.
  document.querySelectorAll("form.vote").forEach(function (form) {
    form.addEventListener("submit", function (event) {
      var button = event.submitter;
      if (!button || !window.fetch) return;
      event.preventDefault();
      var status = form.querySelector(".vote-status");
      fetch(form.getAttribute("data-vote-api"), {
        method: "POST", credentials: "same-origin",
        headers: { "Content-Type": "application/json", "Accept": "application/json" },
        body: JSON.stringify(votePayload(form, button))
      }).then(function (r) {
        return r.json().then(function (data) { return { ok: r.ok, data: data }; });
      }).then(function (res) {
        if (!res.ok) { status.textContent = (res.data.error && res.data.error.message) || "Vote not stored."; return; }
        form.querySelector("[data-up]").textContent = res.data.fix.votes_up;
        form.querySelector("[data-down]").textContent = res.data.fix.votes_down;
        form.querySelectorAll("button").forEach(function (b) { b.setAttribute("aria-pressed", b === button ? "true" : "false"); });
        status.textContent = document.documentElement.lang.indexOf("zh") === 0 ? "已记录你的投票，谢谢！" : "Vote recorded, thank you.";
      }).catch(function () { status.textContent = "Network error: vote not stored."; });
    });
  });

  // A copy button on every code block.
  document.querySelectorAll(".prose pre, pre.example").forEach(function (pre) {
    if (!navigator.clipboard) return;
    var button = document.createElement("button");
    button.type = "button"; button.className = "copy"; button.textContent = "Copy";
    button.setAttribute("aria-label", "Copy code");
    button.addEventListener("click", function () {
      var code = pre.querySelector("code") || pre;
      navigator.clipboard.writeText(code.innerText).then(function () {
        button.textContent = "Copied"; setTimeout(function () { button.textContent = "Copy"; }, 1500);
      });
    });
    pre.appendChild(button);
  });

  // A screenshot pasted (Ctrl+V) or dropped on the paste form is sent like a picked file: the server
  // reads the text out of it and shows that text in the box, to correct and diagnose again.
  document.querySelectorAll("[data-paste-form]").forEach(function (form) {
    var input = form.querySelector("[data-image-input]");
    var box = form.querySelector("textarea");
    var IMAGE = /^image\/(png|jpeg|webp)$/;
    function firstImage(items) {
      for (var i = 0; i < items.length; i++) {
        var file = items[i].getAsFile ? (items[i].kind === "file" ? items[i].getAsFile() : null) : items[i];
        if (file && IMAGE.test(file.type)) return file;
      }
      return null;
    }
    function send(file) {
      var files = new DataTransfer();
      files.items.add(file);
      input.files = files.files;
      box.value = "";
      form.classList.add("reading");
      form.requestSubmit();
    }
    input.addEventListener("change", function () { if (input.files.length) send(input.files[0]); });
    form.addEventListener("paste", function (event) {
      var file = event.clipboardData && firstImage(event.clipboardData.items);
      if (file) { event.preventDefault(); send(file); }
    });
    form.addEventListener("dragover", function (event) { event.preventDefault(); form.classList.add("dragging"); });
    form.addEventListener("dragleave", function () { form.classList.remove("dragging"); });
    form.addEventListener("drop", function (event) {
      form.classList.remove("dragging");
      var file = event.dataTransfer && firstImage(event.dataTransfer.files);
      if (file) { event.preventDefault(); send(file); }
    });
  });
})();
