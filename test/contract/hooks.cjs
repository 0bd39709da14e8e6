const hooks = require('hooks');
