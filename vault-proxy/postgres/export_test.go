package postgres

// AuditEventsPage makes the query behind DB.AuditEvents, for tests of its plan.
var AuditEventsPage = auditEventsPage

// AppendCopyRows is appendCopyRows, for the shipping benchmark.
var AppendCopyRows = appendCopyRows

// LinkCopyRows is linkCopyRows, for the shipping benchmark.
var LinkCopyRows = linkCopyRows
