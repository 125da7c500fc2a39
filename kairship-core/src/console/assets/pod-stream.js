// The console's pod streams: the logs page follows a container's log, the terminal page runs
// a shell, each over the WebSocket named by its element's data-stream (same origin; the URL
// carries the session's CSRF token). Binary messages are the stream's bytes, a text message
// says how it ended. Text is only ever added as text nodes, never as markup.
(function () {
  "use strict";

  function socketUrl(path) {
    var secure = window.location.protocol === "https:";
    return (secure ? "wss://" : "ws://") + window.location.host + path;
  }

  // Drops terminal control sequences (colours, cursor moves) and carriage returns.
  function plain(text) {
    return text
      .replace(/\u001b\[[0-9;?]*[A-Za-z]/g, "")
      .replace(/\u001b\][^\u0007]*\u0007/g, "")
      .replace(/\r/g, "");
  }

  function follow(output, status, onOpen) {
    var decoder = new TextDecoder();
    var ended = false;
    var socket = new WebSocket(socketUrl(output.dataset.stream));
    socket.binaryType = "arraybuffer";
    socket.onopen = function () {
      status.textContent = "Connected.";
      status.dataset.state = "open";
      if (onOpen) {
        onOpen(socket);
      }
    };
    socket.onmessage = function (event) {
      if (typeof event.data === "string") {
        ended = true;
        status.textContent = event.data;
        status.dataset.state = "ended";
        return;
      }
      var atEnd = output.scrollTop + output.clientHeight >= output.scrollHeight - 4;
      output.appendChild(document.createTextNode(plain(decoder.decode(event.data, { stream: true }))));
      if (atEnd) {
        output.scrollTop = output.scrollHeight;
      }
    };
    socket.onclose = function () {
      if (!ended) {
        status.textContent = "The stream was closed.";
        status.dataset.state = "closed";
      }
    };
    return socket;
  }

  var log = document.getElementById("log");
  if (log && log.dataset.stream) {
    follow(log, document.getElementById("log-status"));
  }

  var terminal = document.getElementById("terminal");
  if (terminal && terminal.dataset.stream) {
    var input = document.getElementById("terminal-input");
    var form = document.getElementById("terminal-form");
    var socket = follow(terminal, document.getElementById("terminal-status"), function () {
      input.focus();
    });
    form.addEventListener("submit", function (event) {
      event.preventDefault();
      if (socket.readyState === WebSocket.OPEN) {
        // Enter on a terminal is a carriage return.
        socket.send(input.value + "\r");
        input.value = "";
      }
    });
    document.getElementById("terminal-interrupt").addEventListener("click", function () {
      if (socket.readyState === WebSocket.OPEN) {
        socket.send("\u0003");
      }
    });
  }
})();
