// Boots GraphiQL for static/graphiql.html. Kept out of the HTML so the page works
// under a strict Content-Security-Policy (script-src 'self', no inline script).
(function () {
  "use strict";

  var ENDPOINT = "/api/v1/inspect/graphql";

  var DEFAULT_QUERY = [
    "# OpenRL Inspector (read-only API)",
    "{",
    "  sessions(first: 5) {",
    "    totalCount",
    "    nodes {",
    "      id",
    "      owner",
    "      models(first: 5) {",
    "        nodes {",
    "          id",
    "          state",
    "          stepCount",
    "        }",
    "      }",
    "    }",
    "  }",
    "}",
    "",
  ].join("\n");

  function fail(message) {
    var root = document.getElementById("graphiql");
    root.textContent = "";
    var box = document.createElement("div");
    box.className = "boot";
    box.textContent = "GraphiQL failed to start: " + message;
    root.appendChild(box);
  }

  if (!window.React || !window.ReactDOM || !window.GraphiQL) {
    fail("a vendored script did not load (see the browser console).");
    return;
  }

  var plugins = [];
  if (window.GraphiQLPluginExplorer) {
    plugins.push(window.GraphiQLPluginExplorer.explorerPlugin());
  }

  var fetcher = window.GraphiQL.createFetcher({ url: ENDPOINT });

  var props = {
    fetcher: fetcher,
    defaultQuery: DEFAULT_QUERY,
    plugins: plugins,
    defaultEditorToolsVisibility: true,
  };
  // The dashboard links a cause's drill-in query here as ?query=...
  var linked = new URLSearchParams(window.location.search).get("query");
  if (linked) {
    props.query = linked;
  }

  var root = window.ReactDOM.createRoot(document.getElementById("graphiql"));
  root.render(window.React.createElement(window.GraphiQL, props));
})();
