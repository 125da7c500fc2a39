// The console's keyboard shortcuts and the manners of its live parts (served with the
// Content-Security-Policy like every asset: no inline script, no eval).
//
// Keys (none while typing in a field, or with Ctrl/Alt/Meta): "/" focuses the header's search
// box, "?" opens the list of shortcuts, "g i" goes to the instances, "g m" and "g r" to the
// member clusters and the resources of the instance the page is about.
//
// Live parts (htmx "every 5s"): a refresh is skipped while the tab is hidden or while a field
// inside the part has the focus, and a link that had the focus has it again after the swap.
(function () {
  "use strict";

  function typing(el) {
    if (!el || el === document.body) {
      return false;
    }
    var tag = el.tagName;
    return tag === "INPUT" || tag === "TEXTAREA" || tag === "SELECT" || el.isContentEditable;
  }

  // The instance of the page, as its path names it (already URL-encoded).
  function instance() {
    var m = window.location.pathname.match(/^\/ui\/instances\/([^\/]+)/);
    return m ? m[1] : null;
  }

  function target(key) {
    var i = instance();
    if (key === "i") {
      return "/ui/instances";
    }
    if (key === "m" && i) {
      return "/ui/instances/" + i + "/members";
    }
    if (key === "r" && i) {
      return "/ui/instances/" + i + "/resources";
    }
    return null;
  }

  var pendingG = false;
  var pendingTimer = null;

  document.addEventListener("keydown", function (e) {
    if (e.ctrlKey || e.altKey || e.metaKey || e.defaultPrevented || typing(e.target)) {
      return;
    }
    var dialog = document.getElementById("shortcuts");
    if (dialog && dialog.open) {
      return;
    }
    if (pendingG) {
      pendingG = false;
      window.clearTimeout(pendingTimer);
      var to = target(e.key);
      if (to) {
        e.preventDefault();
        window.location.assign(to);
      }
      return;
    }
    if (e.key === "/") {
      var search = document.getElementById("search-name");
      if (search) {
        e.preventDefault();
        search.focus();
        search.select();
      }
    } else if (e.key === "?") {
      if (dialog && dialog.showModal) {
        e.preventDefault();
        dialog.showModal();
      }
    } else if (e.key === "g") {
      pendingG = true;
      window.clearTimeout(pendingTimer);
      pendingTimer = window.setTimeout(function () {
        pendingG = false;
      }, 1500);
    }
  });

  document.addEventListener("DOMContentLoaded", function () {
    var close = document.getElementById("shortcuts-close");
    var dialog = document.getElementById("shortcuts");
    if (close && dialog) {
      close.addEventListener("click", function () {
        dialog.close();
      });
    }
  });

  function polls(el) {
    return (el.getAttribute("hx-trigger") || "").indexOf("every ") === 0;
  }

  // A refresh nobody would see, or one that would take a field away from who is typing in it.
  document.addEventListener("htmx:beforeRequest", function (e) {
    var el = e.detail && e.detail.elt;
    if (!el || !polls(el)) {
      return;
    }
    if (document.visibilityState === "hidden") {
      e.preventDefault();
      return;
    }
    var focused = document.activeElement;
    if (typing(focused) && el.contains(focused)) {
      e.preventDefault();
    }
  });

  // The link (or button) with the focus inside a part about to be swapped, found again by its
  // id or its address in the new part.
  var refocus = null;

  document.addEventListener("htmx:beforeSwap", function (e) {
    var focused = document.activeElement;
    var part = e.detail && e.detail.target;
    refocus = null;
    if (part && focused && focused !== document.body && part.contains(focused)) {
      refocus = {
        id: part.id,
        own: focused.id || null,
        href: focused.getAttribute("href"),
        tag: focused.tagName
      };
    }
  });

  document.addEventListener("htmx:afterSettle", function () {
    if (!refocus) {
      return;
    }
    var was = refocus;
    refocus = null;
    if (document.activeElement && document.activeElement !== document.body) {
      return;
    }
    var found = was.own ? document.getElementById(was.own) : null;
    var part = was.id ? document.getElementById(was.id) : null;
    if (!found && part && was.href !== null) {
      var links = part.querySelectorAll(was.tag.toLowerCase() + "[href]");
      for (var n = 0; n < links.length; n++) {
        if (links[n].getAttribute("href") === was.href) {
          found = links[n];
          break;
        }
      }
    }
    if (found) {
      found.focus({ preventScroll: true });
    }
  });
})();
