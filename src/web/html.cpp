// SPDX-License-Identifier: MIT
// The console's HTML: escaping, the page frame, the stylesheet and the live-follow script.

#include "html.hpp"

namespace trellis::web::detail {

std::string escape(std::string_view text) {
  std::string out;
  out.reserve(text.size() + text.size() / 8);
  for (const char c : text) {
    switch (c) {
      case '&':
        out += "&amp;";
        break;
      case '<':
        out += "&lt;";
        break;
      case '>':
        out += "&gt;";
        break;
      case '"':
        out += "&quot;";
        break;
      case '\'':
        out += "&#39;";
        break;
      default:
        out += c;
    }
  }
  return out;
}

std::string page(const Frame& frame, std::string_view body) {
  std::string out;
  out.reserve(body.size() + 1024);
  out += "<!doctype html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">";
  out += "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">";
  out += "<title>" + escape(frame.title) + " - trellis</title>";
  out += "<link rel=\"stylesheet\" href=\"/static/console.css\"></head><body>";
  out += "<header><span class=\"brand\">trellis</span>";
  if (!frame.user.empty()) {
    out += "<nav><a href=\"/runs\">Runs</a> <a href=\"/approvals\" id=\"nav-approvals\">Approvals";
    out += " <span class=\"count\">" + std::to_string(frame.waiting) + "</span></a></nav>";
    out += "<span class=\"who\">";
    if (frame.read_only) out += "<span class=\"badge\">read-only</span> ";
    out += "signed in as <b id=\"user\">" + escape(frame.user) + "</b>";
    out += " <form method=\"post\" action=\"/logout\" class=\"inline\">";
    out += "<input type=\"hidden\" name=\"csrf\" value=\"" + escape(frame.csrf) + "\">";
    out += "<button type=\"submit\">Sign out</button></form></span>";
  }
  out += "</header><main>";
  out += body;
  out += "</main><script src=\"/static/console.js\"></script></body></html>\n";
  return out;
}

std::string_view stylesheet() {
  return R"css(body{font:14px/1.4 system-ui,sans-serif;margin:0;color:#222}
header{display:flex;gap:1.5em;align-items:center;padding:.6em 1em;background:#263238;color:#eee}
header a{color:#eee}.brand{font-weight:bold}.who{margin-left:auto}
.badge{background:#b71c1c;color:#fff;padding:0 .4em;border-radius:3px}
.count{background:#fbc02d;color:#000;padding:0 .4em;border-radius:8px}
main{padding:1em}table{border-collapse:collapse;margin:.5em 0}
td,th{border-bottom:1px solid #ddd;padding:.25em .6em;text-align:left;vertical-align:top}
pre{background:#f5f5f5;padding:.5em;overflow:auto;max-width:60em;margin:0}
.status-WaitingApproval{color:#e65100}.status-Failed{color:#b71c1c}.status-Succeeded{color:#1b5e20}
.error{background:#ffebee;border:1px solid #b71c1c;padding:.6em}.note{color:#555}
form.inline{display:inline}.request{border:1px solid #ccc;padding:.6em;margin:.6em 0}
.decide form{margin:.3em 0}textarea{width:40em;height:5em}
)css";
}

std::string_view script() {
  // Follows a run's events: polls /api/v1/runs/RUN/events?after=N (no long-lived connection)
  // and appends rows; text is set with textContent, never parsed as HTML.
  return R"js((function(){
  var table=document.getElementById('events');
  if(!table)return;
  var run=table.getAttribute('data-run'),after=parseInt(table.getAttribute('data-after'),10)||0;
  function cell(tr,text){var td=document.createElement('td');td.textContent=text;tr.appendChild(td);}
  function poll(){
    fetch('/api/v1/runs/'+encodeURIComponent(run)+'/events?after='+after,{credentials:'same-origin'})
      .then(function(r){return r.ok?r.json():null;})
      .then(function(doc){
        if(doc&&doc.events){doc.events.forEach(function(e){
          var tr=document.createElement('tr'),ev=e.event||{};
          cell(tr,String(e.seq));cell(tr,ev.at||'');cell(tr,ev.kind||'');cell(tr,ev.node||'');
          cell(tr,ev.detail===undefined?'':JSON.stringify(ev.detail));
          table.tBodies[0].appendChild(tr);after=Math.max(after,e.seq);});
          table.setAttribute('data-after',String(after));}
      }).catch(function(){}).then(function(){setTimeout(poll,1500);});
  }
  setTimeout(poll,1500);
})();
)js";
}

}  // namespace trellis::web::detail
